"""OpenAI-compatible chat client: native tool calls or JSON ones when the server has none, retries, usage, cost."""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from sophrosyne.base.text import counted
from sophrosyne.errors import ModelError, ModelNotConfigured
from sophrosyne.llm.conversation import Conversation, Reply, ToolCall, ToolSpec
from sophrosyne.llm.json_calls import calls_from_json
from sophrosyne.llm.usage import Usage, count_tokens
from sophrosyne.settings import Settings

if TYPE_CHECKING:
    import openai

T = TypeVar("T")
Notice = Callable[[str], None]

NOT_CONFIGURED = (
    "no model configured: set SOPHROSYNE_MODEL (or --model), SOPHROSYNE_BASE_URL or OPENAI_BASE_URL for a "
    "server other than OpenAI's (or --base-url), and SOPHROSYNE_API_KEY or OPENAI_API_KEY if it needs a key."
)


class ModelClient:
    """Chat completions from any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp, gateways)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        settings: Settings | None = None,
        on_wait: Notice | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.model = model
        self.base_url = base_url
        # Told what is being waited for, every `wait_notice_s` of a call and before each retry (the CLI prints it).
        self.on_wait = on_wait
        if not base_url and not api_key:
            raise ModelError(
                f"OpenAI's endpoint needs an API key (model {model}).",
                hint="Set OPENAI_API_KEY (or SOPHROSYNE_API_KEY), or point SOPHROSYNE_BASE_URL at a local server.",
            )
        # Local servers take any key; the SDK insists on one.
        self.api_key = api_key or "not-needed"
        self.mode: Literal["native", "json"] = "json" if self.settings.agent.tool_mode == "json" else "native"
        self._async: openai.AsyncOpenAI | None = None
        self._sync: openai.OpenAI | None = None

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        model: str | None = None,
        base_url: str | None = None,
        on_wait: Notice | None = None,
    ) -> ModelClient:
        """The agent's model from settings (and command-line overrides); a one-line error when none is set."""
        name = model or settings.agent.model
        if not name:
            raise ModelNotConfigured(NOT_CONFIGURED)
        key = settings.agent.api_key.get_secret_value() if settings.agent.api_key else None
        url = base_url or settings.agent.base_url
        return cls(name, base_url=url, api_key=key, settings=settings, on_wait=on_wait)

    # -- calls ---------------------------------------------------------------------------------------------

    async def chat(self, conversation: Conversation, tools: list[ToolSpec] | None = None) -> Reply:
        """One model turn; retried on rate limits and server errors; JSON tool calls when native ones fail."""
        import openai

        client = self._async_client()
        retry = 0
        while True:
            started = time.perf_counter()
            request = self._request(conversation, tools)
            try:
                response = await self._said(client.chat.completions.create(**request))
            except openai.APIError as exc:
                delay = self._after_failure(exc, retry, tools)
                if delay is not None:
                    retry += 1
                    await asyncio.sleep(delay)
                continue
            except ValueError as exc:  # a 200 whose body is not JSON
                raise self._not_json(exc) from None
            return self._reply(response, request, tools, started)

    def chat_sync(self, conversation: Conversation, tools: list[ToolSpec] | None = None) -> Reply:
        """`chat` for synchronous callers (directive column inference)."""
        import openai

        client = self._sync_client()
        retry = 0
        while True:
            started = time.perf_counter()
            request = self._request(conversation, tools)
            try:
                with self._said_meanwhile():
                    response = client.chat.completions.create(**request)
            except openai.APIError as exc:
                delay = self._after_failure(exc, retry, tools)
                if delay is not None:
                    retry += 1
                    time.sleep(delay)
                continue
            except ValueError as exc:
                raise self._not_json(exc) from None
            return self._reply(response, request, tools, started)

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embeddings of texts, in order, from the endpoint's `/embeddings`."""
        import openai

        client = self._sync_client()
        retry = 0
        while True:
            try:
                with self._said_meanwhile():
                    response = client.embeddings.create(model=self.model, input=texts)
            except openai.APIError as exc:
                delay = self._after_failure(exc, retry, None)
                if delay is not None:
                    retry += 1
                    time.sleep(delay)
                continue
            except ValueError as exc:
                raise self._not_json(exc) from None
            if isinstance(response, str):
                raise self._not_json(response)
            return [list(row.embedding) for row in sorted(response.data, key=lambda row: row.index)]

    async def aclose(self) -> None:
        """Close the HTTP connections (of the event loop the calls ran in)."""
        if self._async is not None:
            await self._async.close()
            self._async = None
        self.close()

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()
            self._sync = None

    def cost(self, usage: Usage) -> float | None:
        """Dollars for the tokens, from the price table (exact model name, else the longest matching prefix)."""
        prices = self.settings.agent.prices
        price = prices.get(self.model)
        if price is None:
            keys = sorted((k for k in prices if self.model.startswith(k)), key=len, reverse=True)
            price = prices[keys[0]] if keys else None
        if price is None:
            return None
        return (usage.prompt_tokens * price.input + usage.completion_tokens * price.output) / 1_000_000

    # -- internals -----------------------------------------------------------------------------------------

    @property
    def _endpoint(self) -> str:
        """The endpoint and model, as an error names them (OpenAI's own when no URL is set)."""
        return f"{self.base_url or 'https://api.openai.com/v1'} (model {self.model})"

    def _async_client(self) -> openai.AsyncOpenAI:
        if self._async is None:
            import openai

            # Our own retry loop honours the settings (and keeps test waits tiny), so the SDK's is off.
            self._async = openai.AsyncOpenAI(
                api_key=self.api_key, base_url=self.base_url, timeout=self._timeout(), max_retries=0
            )
        return self._async

    def _sync_client(self) -> openai.OpenAI:
        if self._sync is None:
            import openai

            self._sync = openai.OpenAI(
                api_key=self.api_key, base_url=self.base_url, timeout=self._timeout(), max_retries=0
            )
        return self._sync

    def _timeout(self) -> Any:
        """The call's limit, and a short one for the connection: an endpoint that does not answer a connection
        is told in seconds, not after the whole call's time."""
        import openai

        agent = self.settings.agent
        return openai.Timeout(agent.call_timeout_s, connect=min(agent.connect_timeout_s, agent.call_timeout_s))

    def _waiting(self, started: float) -> str:
        elapsed = time.monotonic() - started
        return (
            f"waiting for the model {self.model} at {self.base_url or 'https://api.openai.com/v1'}: "
            f"{elapsed:.0f} s so far (gives up at {self.settings.agent.call_timeout_s:.0f} s, llm_timeout_s)"
        )

    async def _said(self, call: Awaitable[T]) -> T:
        """The call's result; every `wait_notice_s` until it comes, `on_wait` is told what is awaited."""
        task = asyncio.ensure_future(call)
        if self.on_wait is None:
            return await task
        started = time.monotonic()
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=self.settings.agent.wait_notice_s)
                if done:
                    return task.result()
                self.on_wait(self._waiting(started))
        finally:
            task.cancel()

    @contextmanager
    def _said_meanwhile(self) -> Iterator[None]:
        """`_said` for a blocking call: a thread tells `on_wait` every `wait_notice_s` until the call returns."""
        if self.on_wait is None:
            yield
            return
        notice, started, stop = self.on_wait, time.monotonic(), threading.Event()

        def tell() -> None:
            while not stop.wait(self.settings.agent.wait_notice_s):
                notice(self._waiting(started))

        thread = threading.Thread(target=tell, name="sophrosyne-model-wait", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def _not_json(self, detail: object) -> ModelError:
        shown = " ".join(str(detail).split())[:120]
        return ModelError(
            f"the model endpoint {self._endpoint} answered with a body that is not JSON ({shown}).",
            hint="Point SOPHROSYNE_BASE_URL at the OpenAI-compatible API itself (its address often ends in /v1).",
        )

    def _request(self, conversation: Conversation, tools: list[ToolSpec] | None) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": conversation.to_openai(self.mode, tools)}
        if tools and self.mode == "native":
            request["tools"] = [t.openai() for t in tools]
        if self.settings.agent.temperature is not None:
            request["temperature"] = self.settings.agent.temperature
        return request

    def _after_failure(self, exc: Exception, retry: int, tools: list[ToolSpec] | None) -> float | None:
        """What a failed call means: seconds to wait before a retry, None to resend at once in JSON mode
        (the server refused `tools`), or a ModelError when it cannot be retried or retries ran out."""
        import openai

        status = getattr(exc, "status_code", None)
        message = _error_message(exc)
        refused_tools = (
            tools
            and self.mode == "native"
            and self.settings.agent.tool_mode == "auto"
            and status in (400, 404, 422, 500, 501)
            and "tool" in message.lower()
        )
        if refused_tools:
            self.mode = "json"  # from now on, for this client: the server has no tool calling
            return None
        unreachable = _unreachable(exc)
        if unreachable:
            # Nothing listens there, or the name does not resolve: waiting would not change that.
            raise ModelError(
                f"the model endpoint {self._endpoint} cannot be reached: {unreachable}.",
                hint="Start the model server, or set SOPHROSYNE_BASE_URL (or --base-url) to where it listens.",
            ) from None
        if isinstance(exc, openai.APITimeoutError):
            message = f"no answer within {self.settings.agent.call_timeout_s:.0f} s (llm_timeout_s)"
        retryable = isinstance(exc, openai.APIConnectionError | openai.APITimeoutError) or (
            status is not None and (status == 429 or status >= 500)
        )
        if not retryable:
            raise ModelError(
                f"the model endpoint {self._endpoint} refused the request ({status}): {message}",
                hint="Check the model name, the API key and the endpoint URL.",
            ) from None
        if retry >= self.settings.agent.call_retries:
            raise ModelError(
                f"the model endpoint {self._endpoint} kept failing after {counted(retry, 'retry')} "
                f"({status or type(exc).__name__}: {message}).",
                hint="Check the endpoint, or wait and try again.",
            ) from None
        after = _retry_after(getattr(exc, "response", None))
        backoff = self.settings.agent.backoff_s * (2**retry) * (1 + random.random() / 10)
        delay = min(self.settings.agent.max_wait_s, after if after is not None else backoff)
        if self.on_wait is not None:
            self.on_wait(
                f"the model endpoint {self._endpoint} failed ({status or type(exc).__name__}: {message}); "
                f"retry {retry + 1} of {self.settings.agent.call_retries} in {delay:.1f} s"
            )
        return delay

    def _reply(self, response: Any, request: dict[str, Any], tools: list[ToolSpec] | None, started: float) -> Reply:
        ms = (time.perf_counter() - started) * 1000
        if isinstance(response, str):  # the SDK hands back a body that is not JSON as text
            raise self._not_json(response)
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise ModelError(f"the model endpoint {self._endpoint} returned no choices.", hint="Check the model name.")
        message = choices[0].message
        text = message.content or ""
        calls: list[ToolCall] = []
        for i, raw in enumerate(getattr(message, "tool_calls", None) or []):
            try:
                arguments = json.loads(raw.function.arguments or "{}")
                bad = None if isinstance(arguments, dict) else raw.function.arguments
            except ValueError:
                arguments, bad = {}, raw.function.arguments
            calls.append(ToolCall(raw.id or f"call-{i}", raw.function.name, arguments if not bad else {}, bad))
        if tools and self.mode == "json" and not calls:
            # Unknown tool names are kept: the solver answers them as a native call would be answered.
            calls = calls_from_json(text)
        usage = self._usage(getattr(response, "usage", None), request, text, calls)
        return Reply(text=text, tool_calls=calls, usage=usage, ms=ms, mode=self.mode)

    def _usage(self, reported: Any, request: dict[str, Any], text: str, calls: list[ToolCall]) -> Usage:
        prompt = getattr(reported, "prompt_tokens", None)
        completion = getattr(reported, "completion_tokens", None)
        usage = Usage()
        if prompt is None or completion is None:
            # No usage from the server: count what was sent and received with the offline tokenizer.
            sent = json.dumps(request["messages"]) + json.dumps(request.get("tools", []))
            received = text + "".join(json.dumps(c.arguments) + c.name for c in calls)
            usage = Usage(count_tokens(sent, self.model), count_tokens(received, self.model), estimated=True)
        else:
            usage = Usage(int(prompt), int(completion))
        usage.cost = self.cost(usage)
        return usage


def _unreachable(exc: BaseException) -> str | None:
    """Why an endpoint cannot be reached at all (a refused connection, a name that does not resolve), from the
    chain of causes under the SDK's connection error; None for anything worth a retry."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ConnectionRefusedError) or "connection refused" in str(seen).lower():
            return "the connection was refused (nothing listens at that address)"
        text = str(seen).lower()
        if "name or service not known" in text or "nodename nor servname" in text or "getaddrinfo failed" in text:
            return "its host name does not resolve"
        seen = seen.__cause__ or seen.__context__
    return None


def _error_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(exc, "message", None) or exc)


def _retry_after(response: Any) -> float | None:
    """Seconds a server asks to wait: `retry-after-ms`, `Retry-After` in seconds, or as an HTTP date."""
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, when.timestamp() - time.time()) if when else None
