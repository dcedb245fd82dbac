"""A live schema: the catalog read in the background, and read again when a cheap fingerprint says it changed."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from sophrosyne.base import deadline
from sophrosyne.base.background import Background
from sophrosyne.errors import NotReady, SophrosyneError

if TYPE_CHECKING:
    from sophrosyne.schema.catalog import Catalog

logger = logging.getLogger("sophrosyne.schema")

# Time kept back from a call's deadline to answer once the schema is there.
ANSWER_MARGIN_S = 0.5
# How long a call waits for a new reading of a changed schema before it answers from the previous one.
RELOAD_WAIT_S = 2.0
# The longest a fingerprint check may take: on a busy server the previous catalog serves meanwhile.
CHECK_TIMEOUT_S = 2.0


class LiveCatalog:
    """The catalog of one database, kept current.

    The first reading starts in the background (a server answers `initialize` before a large schema is
    read); a call waits for it within its deadline, or is told the schema is still loading. Every
    `check_every_s` at most, a call first reads the engine's schema fingerprint (SQLite's schema_version,
    a hash over the catalog views elsewhere) and the file's identity: when either changed, the catalog is
    read again, and calls get the new one as soon as it is ready.

    `read` reads the catalog; `fingerprint(timeout_s)` reads what identifies the schema now; `moved()` says
    whether the database's file was replaced (a stat, checked on every call).
    """

    def __init__(
        self,
        name: str,
        read: Callable[[], Catalog],
        *,
        fingerprint: Callable[[float], object],
        moved: Callable[[], bool],
        check_every_s: float,
    ) -> None:
        self.name = name
        self._read = read
        self._fingerprint = fingerprint
        self._moved = moved
        self._every = check_every_s
        self._lock = threading.Lock()
        self._current: Catalog | None = None
        self._loading = self._new_load()
        self._seen: object = None  # the fingerprint of the reading in progress or done
        self._checked = 0.0

    def _new_load(self) -> Background[Catalog]:
        return Background(self._read, name=f"sophrosyne-schema-{self.name}")

    @property
    def ready(self) -> bool:
        return self._current is not None or self._loading.ready

    def start(self) -> None:
        """Start the first reading now, in the background."""
        self._loading.start()

    def get(self) -> Catalog:
        """The current catalog: fresh within `check_every_s`, waited for within the call's deadline."""
        self._check()
        loading = self._loading
        if self._current is None:
            catalog = loading.wait(deadline.left(ANSWER_MARGIN_S))
            if catalog is None:
                raise NotReady(
                    f"the schema of {self.name} is still being read ({loading.running_s:.0f} s so far).",
                    hint="Ask again in a few seconds.",
                )
        else:
            catalog = loading.wait(min(RELOAD_WAIT_S, deadline.remaining(RELOAD_WAIT_S)))
            if catalog is None:
                return self._current  # the new reading is not ready: the previous one serves meanwhile
        with self._lock:
            self._current = catalog
        return catalog

    def refresh(self) -> Catalog:
        """Read the schema again now, whatever the fingerprint says."""
        with self._lock:
            self._loading = self._new_load()
            self._checked = time.monotonic()
        return self.get()

    def _check(self) -> None:
        every = self._every
        now = time.monotonic()
        # A file's identity costs a stat: checked on every call, so a removed file is an error at once and
        # a replaced one is read anew at once.
        moved = self._moved()
        with self._lock:
            if self._seen is not None and now - self._checked < every and not moved:
                return
            self._checked = now
        try:
            seen = self._fingerprint(min(CHECK_TIMEOUT_S, deadline.remaining(CHECK_TIMEOUT_S)))
        except SophrosyneError:
            if self._seen is None:
                return  # the first reading reports the error itself
            raise
        with self._lock:
            if self._seen is None:
                self._seen = seen
            elif seen != self._seen:
                logger.info("the schema of %s changed; reading it again", self.name)
                self._seen = seen
                self._loading = self._new_load()
                self._loading.start()
