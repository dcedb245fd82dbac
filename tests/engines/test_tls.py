"""TLS to the database, from a source's `tls` section: against a PostgreSQL that speaks TLS only, with a CA and
certificates made for the run (scripts/pg_tls.sh starts it and runs the `tls` tests); the options' checks and
their driver arguments without a server."""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.engines import unreachable
from sophrosyne.engines.tls import TLS, mysql_args, postgres_args
from sophrosyne.errors import ConfigError, ConnectionFailed
from sophrosyne.settings import Settings
from sophrosyne.sources import Sources, load_sources


def _sources(folder: Path, url: str, tls: str) -> Path:
    path = folder / "sources.toml"
    path.write_text(f'[sources.shop]\nurl = "{url}"\n\n[sources.shop.tls]\n{tls}\n')
    return path


# Against the server --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certs() -> Iterator[tuple[Path, int]]:
    folder = os.environ.get("SOPHROSYNE_TEST_PG_TLS")
    if not folder:
        unreachable("PostgreSQL with TLS", "run the `tls` tests through scripts/pg_tls.sh, which starts it")
    yield Path(str(folder)), int(os.environ.get("SOPHROSYNE_TEST_PG_TLS_PORT", "55432"))


def _rows(certs: tuple[Path, int], tmp_path: Path, host: str, tls: str, user: str = "postgres") -> list[tuple]:
    folder, port = certs
    path = _sources(tmp_path, f"postgresql://{user}@{host}:{port}/postgres", tls.replace("DIR", str(folder)))
    sources = Sources.open(load_sources(path), Settings(connect_timeout_s=3))
    try:
        result = sources.get("shop").db.run("SELECT id, name FROM items ORDER BY id")
        return [tuple(row) for row in result.rows]
    finally:
        sources.close()


@pytest.mark.tls
def test_verify_full_against_the_servers_ca_reads_the_rows(certs: tuple[Path, int], tmp_path: Path) -> None:
    rows = _rows(certs, tmp_path, "localhost", 'mode = "verify-full"\nca = "DIR/ca.crt"')
    assert rows == [(1, "tls"), (2, "ok")]


@pytest.mark.tls
def test_another_ca_is_refused_with_what_to_check(certs: tuple[Path, int], tmp_path: Path) -> None:
    with pytest.raises(ConnectionFailed) as caught:
        _rows(certs, tmp_path, "localhost", 'mode = "verify-full"\nca = "DIR/other-ca.crt"')
    assert "TLS failed" in caught.value.message and "certificate verify failed" in caught.value.message
    assert "tls.ca is the CA that signed the certificate of the server at localhost:" in (caught.value.hint or "")


@pytest.mark.tls
def test_verify_full_checks_the_host_name_and_verify_ca_does_not(certs: tuple[Path, int], tmp_path: Path) -> None:
    # The server's certificate names `localhost` only.
    with pytest.raises(ConnectionFailed, match=r"TLS failed: .*does not match host name \"127\.0\.0\.1\""):
        _rows(certs, tmp_path, "127.0.0.1", 'mode = "verify-full"\nca = "DIR/ca.crt"')
    assert _rows(certs, tmp_path, "127.0.0.1", 'mode = "verify-ca"\nca = "DIR/ca.crt"')[0] == (1, "tls")


@pytest.mark.tls
def test_a_client_certificate_logs_in(certs: tuple[Path, int], tmp_path: Path) -> None:
    given = 'mode = "verify-full"\nca = "DIR/ca.crt"\ncert = "DIR/client.crt"\nkey = "DIR/client.key"'
    assert _rows(certs, tmp_path, "localhost", given, user="certuser") == [(1, "tls"), (2, "ok")]
    with pytest.raises(ConnectionFailed, match="certificate"):  # the server asks certuser for one
        _rows(certs, tmp_path, "localhost", 'mode = "verify-full"\nca = "DIR/ca.crt"', user="certuser")


@pytest.mark.tls
def test_the_server_refuses_a_connection_without_tls(certs: tuple[Path, int], tmp_path: Path) -> None:
    with pytest.raises(ConnectionFailed, match="no encryption"):
        _rows(certs, tmp_path, "localhost", 'mode = "disable"')


def _mariadb(certs: tuple[Path, int], tmp_path: Path, host: str, tls: str) -> str:
    """The TLS version of the session, read through a MariaDB source."""
    folder, _ = certs
    port = int(os.environ.get("SOPHROSYNE_TEST_MARIADB_TLS_PORT", "53306"))
    path = _sources(tmp_path, f"mysql://root@{host}:{port}/mysql", tls.replace("DIR", str(folder)))
    sources = Sources.open(load_sources(path), Settings(connect_timeout_s=3))
    try:
        sql = "SELECT variable_value FROM information_schema.session_status WHERE variable_name = 'SSL_VERSION'"
        return str(sources.get("shop").db.run(sql).rows[0][0])
    finally:
        sources.close()


@pytest.mark.tls
def test_mariadb_verify_full_against_the_servers_ca_is_encrypted(certs: tuple[Path, int], tmp_path: Path) -> None:
    assert _mariadb(certs, tmp_path, "localhost", 'ca = "DIR/ca.crt"').startswith("TLSv1.")
    assert _mariadb(certs, tmp_path, "127.0.0.1", 'mode = "verify-ca"\nca = "DIR/ca.crt"').startswith("TLSv1.")


@pytest.mark.tls
def test_mariadb_refuses_another_ca_and_a_wrong_host(certs: tuple[Path, int], tmp_path: Path) -> None:
    with pytest.raises(ConnectionFailed, match=r"TLS failed: .*certificate verify failed"):
        _mariadb(certs, tmp_path, "localhost", 'ca = "DIR/other-ca.crt"')
    with pytest.raises(ConnectionFailed, match=r"TLS failed: .*(IP address mismatch|doesn't match)"):
        _mariadb(certs, tmp_path, "127.0.0.1", 'ca = "DIR/ca.crt"')
    # Without grant tables the server lets a plain session in (require_secure_transport is not applied): it is one.
    assert _mariadb(certs, tmp_path, "localhost", 'mode = "disable"') == ""


# The options, without a server ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tls", "error"),
    [
        ('mode = "verify-everything"', r"mode is `verify-everything`"),
        ('mode = "require"\nport = "1"', r"unknown key `port`"),
        ('ca = "missing.pem"', r"tls\.ca: .*missing\.pem is not a file"),
        ('cert = "ca.pem"', r"needs both `cert` and `key`"),
        ('mode = "disable"\nca = "ca.pem"', r"mode `disable` uses no certificate"),
        ("mode = 1", r"tls\.mode must be a string"),
    ],
)
def test_tls_options_are_checked_when_the_file_is_read(tmp_path: Path, tls: str, error: str) -> None:
    (tmp_path / "ca.pem").write_text("not read here")
    with pytest.raises(ConfigError, match=error):
        load_sources(_sources(tmp_path, "postgresql://u@db.example.org/shop", tls))


def test_tls_is_for_a_server(tmp_path: Path) -> None:
    path = tmp_path / "sources.toml"
    path.write_text('[sources.hr]\npath = "hr.sqlite"\n\n[sources.hr.tls]\nmode = "require"\n')
    with pytest.raises(ConfigError, match=r"tls is for a database server's `url`"):
        load_sources(path)
    spec = load_sources(_sources(tmp_path, "spark://u@127.0.0.1:1/default", 'mode = "require"'))[0]
    with pytest.raises(ConfigError, match=r"`tls` section is for PostgreSQL and MySQL/MariaDB sources, not spark"):
        Sources.open([spec], probe=False)


def test_relative_paths_are_from_the_sources_file(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("x")
    spec = load_sources(_sources(tmp_path, "postgresql://u@db.example.org/shop", 'ca = "ca.pem"'))[0]
    assert spec.tls == TLS(mode="verify-full", ca=tmp_path / "ca.pem")


def test_the_drivers_arguments_state_every_check(tmp_path: Path) -> None:
    ca, cert, key = tmp_path / "ca.crt", tmp_path / "c.crt", tmp_path / "c.key"
    assert postgres_args(TLS("verify-full", ca, cert, key)) == {
        "sslmode": "verify-full",
        "sslrootcert": str(ca),
        "sslcert": str(cert),
        "sslkey": str(key),
    }
    assert postgres_args(TLS("verify-ca")) == {"sslmode": "verify-ca", "sslrootcert": "system"}
    assert postgres_args(TLS("require")) == {"sslmode": "require"}
    assert mysql_args(TLS("disable")) == {"ssl_disabled": True}
    # PyMySQL's own dictionary checks no host name without a CA: the context states both checks.
    full = mysql_args(TLS("verify-full"))["ssl"]
    assert isinstance(full, ssl.SSLContext) and full.check_hostname and full.verify_mode == ssl.CERT_REQUIRED
    by_ca = mysql_args(TLS("verify-ca"))["ssl"]
    assert not by_ca.check_hostname and by_ca.verify_mode == ssl.CERT_REQUIRED
    anything = mysql_args(TLS("require"))["ssl"]
    assert not anything.check_hostname and anything.verify_mode == ssl.CERT_NONE
