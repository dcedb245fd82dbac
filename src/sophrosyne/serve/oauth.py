"""Bearer JWTs of the policy's identity provider, checked offline (MCP authorization, OAuth 2.1 resource server):
the signature against the provider's JWKS (fetched, cached, fetched again for a key id it does not know yet),
then `iss`, `aud` (this server's own resource URL: a token for another resource is refused), `exp` and `nbf`
with a small leeway. joserfc does the JOSE; a refusal says why, in words a person can act on."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import anyio
import httpx2
from joserfc import jws, jwt
from joserfc.errors import (
    BadSignatureError,
    ExpiredTokenError,
    InvalidClaimError,
    JoseError,
    MissingClaimError,
)
from joserfc.jwk import KeySet

from sophrosyne.serve.refused import MAX_TOKEN_CHARS, Refused
from sophrosyne.sql.policy.identity import Identity

logger = logging.getLogger("sophrosyne.server")

JWKS_FETCH_S = 5.0  # the provider's keys are read within this, or the token is refused for now
JWKS_KEEP_S = 300.0  # keys are read again after this
JWKS_RETRY_S = 30.0  # an unknown key id fetches the keys again, at most this often (a made-up kid is cheap)
_PUBLIC_KEY_TYPES = {"RSA", "EC", "OKP"}  # never "oct": a shared secret is no provider's public key


class ProviderKeys:
    """The identity provider's public keys (its JWKS), read when first needed, kept `JWKS_KEEP_S`, read again
    sooner for a key id not among them (a rotated key), at most every `JWKS_RETRY_S`."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._keys: KeySet | None = None
        self._read_at = -float("inf")
        self._lock = anyio.Lock()

    async def for_kid(self, kid: str | None) -> KeySet:
        async with self._lock:
            age = time.monotonic() - self._read_at
            if (
                self._keys is None
                or age > JWKS_KEEP_S
                or (kid is not None and not self._has(kid) and age > JWKS_RETRY_S)
            ):
                await self._read()
            assert self._keys is not None
            return self._keys

    def _has(self, kid: str) -> bool:
        return self._keys is not None and any(key.kid == kid for key in self._keys.keys)

    async def _read(self) -> None:
        self._read_at = time.monotonic()  # a failed read is not retried at once either
        try:
            async with httpx2.AsyncClient(timeout=JWKS_FETCH_S, follow_redirects=False) as client:
                answer = await client.get(self.url)
            answer.raise_for_status()
            document = answer.json()
            listed = document["keys"] if isinstance(document, dict) else None
            if not isinstance(listed, list):
                raise ValueError("no `keys` list")
            public = [k for k in listed if isinstance(k, dict) and k.get("kty") in _PUBLIC_KEY_TYPES and "d" not in k]
            self._keys = KeySet.import_key_set({"keys": public})
        except (httpx2.HTTPError, ValueError, KeyError, JoseError) as exc:
            logger.warning("could not read the identity provider's keys at %s: %s", self.url, exc)
            if self._keys is None:
                raise Refused("the identity provider's keys could not be read; try again shortly.") from None


class JwtVerifier:
    """Checks a provider's access token and gives its claims, or raises Refused with the reason."""

    def __init__(self, identity: Identity) -> None:
        assert identity.jwks_url is not None  # PolicyTokens makes a JwtVerifier only for a provider with keys
        self.identity = identity
        self.keys = ProviderKeys(identity.jwks_url)
        self.claims = jwt.JWTClaimsRegistry(
            leeway=identity.leeway_s,
            iss={"essential": True, "value": identity.issuer},
            aud={"essential": True, "value": identity.resource},
            exp={"essential": True},
            sub={"essential": True},
        )

    async def verify(self, token: str) -> dict[str, Any]:
        if len(token) > MAX_TOKEN_CHARS:
            raise Refused("the token is too long to be an access token.")
        try:
            header = jws.extract_compact(token.encode("ascii")).protected
        except (JoseError, ValueError, UnicodeError):
            raise Refused("the token is not a signed JWT this server can read.") from None
        algorithm = header.get("alg")
        if algorithm not in self.identity.algorithms:
            raise Refused(
                f"the token's algorithm `{algorithm}` is not accepted; this server takes "
                f"{', '.join(self.identity.algorithms)} (public-key signatures) only."
            )
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise Refused("the token's key id is not a text.")
        keys = await self.keys.for_kid(kid)
        if kid is not None and not any(key.kid == kid for key in keys.keys):
            raise Refused(
                f"the token is signed with key id `{kid[:64]}`, which the identity provider does not publish."
            )
        try:
            decoded = jwt.decode(token, keys, algorithms=list(self.identity.algorithms))
        except BadSignatureError:
            raise Refused("the token's signature does not verify: it was altered or signed by someone else.") from None
        except (JoseError, ValueError, json.JSONDecodeError):
            raise Refused("the token could not be verified with the identity provider's keys.") from None
        self._check_claims(decoded.claims)
        return dict(decoded.claims)

    def _check_claims(self, claims: dict[str, Any]) -> None:
        try:
            self.claims.validate(claims)
        except ExpiredTokenError:
            raise Refused("the token has expired; get a new one from the identity provider.") from None
        except MissingClaimError as exc:
            raise Refused(f"the token lacks a required claim ({exc.description}).") from None
        except InvalidClaimError as exc:
            claim = exc.claim
            if claim == "iss":
                raise Refused(
                    f"the token was issued by another issuer; this server accepts {self.identity.issuer}."
                ) from None
            if claim == "aud":
                raise Refused(
                    f"the token was issued for another resource; request one for {self.identity.resource}."
                ) from None
            if claim in ("nbf", "iat"):
                raise Refused(f"the token is not valid yet (its `{claim}` is in the future).") from None
            raise Refused(f"the token's `{claim}` claim is not valid.") from None
        except JoseError as exc:
            raise Refused(f"the token's claims are not valid ({exc.error}).") from None
