"""The tests' identity provider (tests/fixtures/identity.py) on its own, for clients outside the test suite (MCP
Inspector in scripts/inspector.sh): keys made for the run, its JWKS on 127.0.0.1, until it is stopped.

It writes into FOLDER a policy for `sophrosyne serve demo --http --port PORT` (the provider's issuer and keys,
the resource http://127.0.0.1:PORT/mcp, a claim rule, and a static token as its sha256), then `token` (a JWT
the rule gives the `analyst` role, valid ten minutes) and `static_token`; `token` is written last, so a
caller waits for it. Example:
    python scripts/identity_provider.py /tmp/idp 8123 &
"""

from __future__ import annotations

import argparse
import secrets
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fixtures.identity import identity_provider
from sophrosyne.sql.policy import hash_token


def policy(issuer: str, jwks_url: str, resource: str, static: str) -> str:
    return f"""default_role = "analyst"

[roles.admin]

[roles.analyst]
deny = ["absence_records"]

[identity]
issuer = "{issuer}"
jwks_url = "{jwks_url}"
resource = "{resource}"

[[identity.rules]]
group = "analysts"
role = "analyst"

[tokens]
"{hash_token(static)}" = "admin"
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    parser.add_argument("port", type=int, help="the port `serve --http` will listen on (the tokens' audience)")
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    resource = f"http://127.0.0.1:{args.port}/mcp"
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with identity_provider() as provider:
        static = secrets.token_urlsafe(24)
        (args.folder / "policy.toml").write_text(policy(provider.issuer, provider.jwks_url, resource, static))
        (args.folder / "static_token").write_text(static)
        token = provider.token(aud=resource, sub="inspector", groups=["analysts"], exp=provider.claims()["iat"] + 600)
        (args.folder / "token.part").write_text(token)
        (args.folder / "token.part").rename(args.folder / "token")
        while not stop.wait(1):
            pass


if __name__ == "__main__":
    main()
