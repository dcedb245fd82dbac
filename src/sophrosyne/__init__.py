"""Sophrosyne: a moderated data environment for SQL agents."""

__version__ = "0.1.0"
