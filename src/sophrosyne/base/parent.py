"""The process that started this one, read when the command began (before any thread could run)."""

from __future__ import annotations

import os

# A stdio server watches it (serve/handshake.py): read later, a client killed during the start-up would have
# left init as the parent seen, and the server would watch init for ever.
STARTED_BY = os.getppid()
