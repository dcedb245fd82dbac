"""What `sophrosyne serve` was asked, opened before the MCP SDK is imported: the schema is read meanwhile."""

from __future__ import annotations

import gc
from pathlib import Path

from pydantic import BaseModel

from sophrosyne.environment import Environment
from sophrosyne.errors import ConfigError
from sophrosyne.settings import Settings
from sophrosyne.sources import Sources, load_sources

# Allocations between two collections of the cyclic collector's youngest generation in a server (Python's
# default is 700). A start builds millions of objects that live as long as the server (catalog, indexes,
# lexicon), and collecting every 700 of them cost a third of a cached start's CPU at 20,000 tables
# (6.4 -> 5.1 s to the first directives); nothing a server holds relies on prompt collection of cycles.
SERVER_GC_THRESHOLD = 50_000


def collect_less_often() -> None:
    """Set the server's collector threshold (before the schema and indexes are read)."""
    gc.set_threshold(SERVER_GC_THRESHOLD, *gc.get_threshold()[1:])


class ServeSpec(BaseModel):
    """What `sophrosyne serve` was asked, so that each HTTP worker process opens the same sources."""

    db: str | None = None
    sources: Path | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    config: Path | None = None
    descriptions: Path | None = None
    policy: Path | None = None
    role: str | None = None
    directives: str | None = None
    audit_log: Path | None = None
    allow_python: bool = False
    drain_s: float = 11.0

    def open(self) -> Sources:
        """The sources file's databases, or the one database given."""
        settings = Settings.load(
            self.config, policy_file=self.policy, directives=self.directives, audit_log=self.audit_log
        )
        if self.sources is not None:
            if self.policy is not None or self.role is not None or self.descriptions is not None:
                raise ConfigError(
                    "with --sources, each source names its own policy, role and descriptions.",
                    hint="Set policy, role and descriptions per source in the sources file.",
                )
            return Sources.open(load_sources(self.sources), settings, probe=False)
        env = Environment.open(
            self.db or "", settings=settings, descriptions=self.descriptions, role_name=self.role, probe=False
        )
        return Sources.single(env)
