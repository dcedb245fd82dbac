"""The package's version, in the ground floor: the server, the CLI and /health report it, below the facade."""

__version__ = "0.1.0"
