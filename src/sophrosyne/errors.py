"""One error hierarchy: every error a client may see says what was wrong and what to do next."""

from __future__ import annotations

from sophrosyne.base.data_blocks import escaped


class SophrosyneError(Exception):
    """Base of every error the environment raises on purpose.

    `message` is ours and safe to show to a client (no stack traces, no internals); `hint` says what to do next;
    `quoted` is text of the database's that the error carries (an engine's own message, which may quote data):
    an agent reads it inside a data block, everyone else escaped to one line.
    """

    code = "error"
    exit_code = 1  # of a command that stops on it

    def __init__(self, message: str, *, hint: str | None = None, quoted: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.quoted = quoted

    @property
    def full_message(self) -> str:
        """The message with the database's text it quotes, on one line."""
        return escaped(f"{self.message} {self.quoted}" if self.quoted else self.message)

    def __str__(self) -> str:
        return f"{self.full_message} Hint: {escaped(self.hint)}" if self.hint else self.full_message

    def to_dict(self) -> dict[str, str]:
        data = {"error": self.code, "message": self.message}
        if self.quoted:
            data["quoted"] = self.quoted
        if self.hint:
            data["hint"] = self.hint
        return data


class ConfigError(SophrosyneError):
    """Bad input to the program itself: a database path, a URL, a setting, a policy file."""

    code = "config"


class CacheUnavailable(ConfigError):
    """The cache folder cannot be written or read (full, read-only, not a folder): an index cannot be kept."""

    code = "cache"


class ConnectionFailed(SophrosyneError):
    """The database could not be opened or reached."""

    code = "connection"


class UnknownTable(SophrosyneError):
    """A table that does not exist (or that the role cannot see)."""

    code = "unknown_table"


class UnknownSource(SophrosyneError):
    """A source name the server does not serve, or none given where there are several."""

    code = "unknown_source"


class UnknownColumn(SophrosyneError):
    """A column that does not exist in a table (or that the role cannot see)."""

    code = "unknown_column"


class InvalidArgument(SophrosyneError):
    """A tool argument is out of range or of the wrong form (an empty search term, a negative limit)."""

    code = "invalid_argument"


class RejectedSQL(SophrosyneError):
    """The guard refused a statement: it is not one read-only query, or it calls a forbidden function."""

    code = "rejected"


class SQLSyntaxError(SophrosyneError):
    """The statement does not parse; carries the position when the parser gives one."""

    code = "syntax"

    def __init__(
        self, message: str, *, hint: str | None = None, line: int | None = None, column: int | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.line = line
        self.column = column


class QueryTimeout(SophrosyneError):
    """The statement ran longer than the timeout and was stopped."""

    code = "timeout"


class QueryFailed(SophrosyneError):
    """The engine refused or failed the statement; the message is the engine's, cleaned of internals."""

    code = "query_failed"


class UnknownExport(SophrosyneError):
    """No export of the caller's has this id: never made, expired, or another caller's (all read alike)."""

    code = "unknown_export"


class ExportTooLarge(SophrosyneError):
    """An export passed a bound that stops it (its file's bytes): the partial file is removed."""

    code = "export_too_large"


class AccessDenied(SophrosyneError):
    """The caller's role may not do this (bad token, denied table)."""

    code = "access_denied"


class CallCancelled(SophrosyneError):
    """The client cancelled the call or went away; its work and statement were stopped."""

    code = "cancelled"


class NotReady(SophrosyneError):
    """What the call needs (the schema, an index) is still loading; the call may be asked again shortly."""

    code = "loading"


class Busy(SophrosyneError):
    """The caller has as many calls running as it may, and this one found its queue full or waited too long:
    it was not started, and may be sent again once an earlier call is answered."""

    code = "busy"


class ModelError(SophrosyneError):
    """The model endpoint is not configured, refused the request, or kept failing after the retries."""

    code = "model"


class ModelNotConfigured(ModelError):
    """No model is set: commands that need one exit 2, so scripts tell it from a failed run."""

    exit_code = 2


class SandboxUnavailable(SophrosyneError):
    """A layer of the Python sandbox cannot be set up here, so no Python runs (rather than run less isolated)."""

    code = "sandbox_unavailable"


class ProgramFailed(SophrosyneError):
    """A sandboxed Python program raised, or hit its time, CPU or memory limit; `kind` says which."""

    code = "program_failed"

    def __init__(
        self, message: str, *, kind: str = "error", hint: str | None = None, output: str = "", quoted: str | None = None
    ) -> None:
        super().__init__(message, hint=hint, quoted=quoted)
        self.kind = kind
        self.output = output
