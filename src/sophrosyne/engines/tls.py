"""TLS to a database server, as a source's `tls` section gives it (docs/connections.md): a mode as libpq names them,
the CA that signed the server's certificate, a client certificate and its key. Each engine turns it into its
driver's connect arguments (ServerEngine.tls_args)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sophrosyne.engines.options import option_files, option_table
from sophrosyne.errors import ConfigError

# From least to most checked: no TLS; encrypted, any certificate; signed by the CA; and naming the URL's host.
MODES = ("disable", "require", "verify-ca", "verify-full")
KEYS = {"mode", "ca", "cert", "key"}


@dataclass(frozen=True)
class TLS:
    """How a connection to the server is encrypted and checked."""

    mode: str = "verify-full"
    ca: Path | None = None  # None in a verify mode: the system's CA certificates
    cert: Path | None = None  # a client certificate, and its key
    key: Path | None = None

    @property
    def verifies(self) -> bool:
        return self.mode in {"verify-ca", "verify-full"}


def read_tls(entry: Any, where: str, folder: Path) -> TLS:
    """A `tls` table of a sources file (`where` names it in errors); relative paths are from `folder`."""
    entry = option_table(entry, where, KEYS, '[sources.NAME.tls] with mode = "verify-full"')
    for key, value in entry.items():
        if not isinstance(value, str):
            raise ConfigError(f"{where}.{key} must be a string.")
    mode = entry.get("mode", "verify-full")
    if mode not in MODES:
        raise ConfigError(f"{where}.mode is `{mode}`.", hint=f"Give one of {', '.join(MODES)}.")
    files = option_files(entry, where, folder, ("ca", "cert", "key"))
    if (files["cert"] is None) != (files["key"] is None):
        raise ConfigError(f"{where} needs both `cert` and `key` for a client certificate, or neither.")
    if mode == "disable" and any(files.values()):
        raise ConfigError(f"{where}: mode `disable` uses no certificate.", hint="Remove ca, cert and key, or TLS.")
    return TLS(mode=mode, ca=files["ca"], cert=files["cert"], key=files["key"])


def postgres_args(tls: TLS) -> dict[str, Any]:
    """libpq's parameters (psycopg passes them on)."""
    args: dict[str, Any] = {"sslmode": tls.mode}
    if tls.verifies:
        # libpq would read ~/.postgresql/root.crt; `system` is the system's CA store (libpq 16 and later).
        args["sslrootcert"] = str(tls.ca) if tls.ca else "system"
    if tls.cert and tls.key:
        args |= {"sslcert": str(tls.cert), "sslkey": str(tls.key)}
    return args


def mysql_args(tls: TLS) -> dict[str, Any]:
    """PyMySQL's: an SSL context of our own (PyMySQL's `ssl` dictionary, without a CA, checks no host name)."""
    import ssl

    if tls.mode == "disable":
        return {"ssl_disabled": True}
    context = ssl.create_default_context(cafile=str(tls.ca) if tls.ca else None)
    context.check_hostname = tls.mode == "verify-full"
    if not tls.verifies:
        context.verify_mode = ssl.CERT_NONE
    if tls.cert and tls.key:
        context.load_cert_chain(str(tls.cert), str(tls.key))
    return {"ssl": context}
