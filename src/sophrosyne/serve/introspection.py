"""Opaque access tokens asked of the identity provider's introspection endpoint (RFC 7662): the token is posted
with the server's client credentials, an answer is taken only when it says `active` and names this server's
resource in `aud`, and kept (by the token's hash) until the sooner of its `exp` and `max_age_s`. Anything else,
an endpoint that cannot be reached included, refuses the token: the server fails closed."""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import httpx2

from sophrosyne.serve.refused import MAX_TOKEN_CHARS, Refused
from sophrosyne.sql.policy.identity import Identity, Introspection

logger = logging.getLogger("sophrosyne.server")

INTROSPECT_S = 5.0  # the provider answers within this, or the token is refused for now
MAX_KEPT = 10_000  # answers kept at most; the oldest go first (a flood of tokens cannot grow the memory)


class Introspector:
    """Checks an opaque token with the provider and gives its claims (the introspection answer less `active`),
    or raises Refused with the reason. `clock` is the wall clock the claims' times are read against."""

    def __init__(self, identity: Identity, clock: Callable[[], float] = time.time) -> None:
        assert identity.introspection is not None
        self.identity = identity
        self.endpoint: Introspection = identity.introspection
        self.clock = clock
        self.asked = 0  # requests sent to the endpoint, for the operator's and the tests' eyes
        self._kept: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()

    async def verify(self, token: str) -> dict[str, Any]:
        if len(token) > MAX_TOKEN_CHARS:
            raise Refused("the token is too long to be an access token.")
        key = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
        now = self.clock()
        kept = self._kept.get(key)
        if kept is not None and now < kept[0]:
            return dict(kept[1])
        self._kept.pop(key, None)
        claims = self._check(await self._ask(token), now)
        until = now + self.endpoint.max_age_s
        if isinstance(claims.get("exp"), int | float):
            until = min(until, float(claims["exp"]))
        if until > now:
            self._kept[key] = (until, claims)
            while len(self._kept) > MAX_KEPT:
                self._kept.popitem(last=False)
        return dict(claims)

    async def _ask(self, token: str) -> dict[str, Any]:
        self.asked += 1
        endpoint = self.endpoint
        try:
            async with httpx2.AsyncClient(timeout=INTROSPECT_S, follow_redirects=False) as client:
                answer = await client.post(
                    endpoint.url,
                    data={"token": token, "token_type_hint": "access_token"},
                    auth=(endpoint.client_id, endpoint.client_secret),  # client_secret_basic
                    headers={"accept": "application/json"},
                )
            answer.raise_for_status()
            document = answer.json()
        except (httpx2.HTTPError, ValueError) as exc:
            logger.warning("could not introspect a token at %s: %s", endpoint.url, exc)
            raise Refused(
                "the identity provider's introspection endpoint could not be asked about the token; try again "
                "shortly, and if it persists tell the server's operator."
            ) from None
        if not isinstance(document, dict) or not isinstance(document.get("active"), bool):
            logger.warning("the introspection endpoint %s answered without an `active` boolean", endpoint.url)
            raise Refused("the identity provider's introspection answer is not one this server can read.")
        return document

    def _check(self, answer: dict[str, Any], now: float) -> dict[str, Any]:
        if answer["active"] is not True:
            raise Refused(
                "the identity provider says the token is not active (expired, revoked or unknown); get a new one."
            )
        leeway = self.identity.leeway_s
        claims = {k: v for k, v in answer.items() if k != "active"}
        for name in ("exp", "nbf", "iat"):
            if name in claims and (isinstance(claims[name], bool) or not isinstance(claims[name], int | float)):
                raise Refused(f"the token's `{name}` is not a time.")
        if "exp" in claims and claims["exp"] + leeway <= now:
            raise Refused("the token has expired; get a new one from the identity provider.")
        for name in ("nbf", "iat"):
            if name in claims and claims[name] - leeway > now:
                raise Refused(f"the token is not valid yet (its `{name}` is in the future).")
        if "iss" in claims and claims["iss"] != self.identity.issuer:
            raise Refused(f"the token was issued by another issuer; this server accepts {self.identity.issuer}.")
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.identity.resource not in audiences:
            # No audience at all is refused too: a token the provider did not bind to this server could be any
            # other server's, replayed here.
            raise Refused(
                f"the token was issued for another resource (or for none); request one for {self.identity.resource}."
            )
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise Refused("the token lacks a required claim (sub): the introspection answer names no subject.")
        return claims
