"""OpenAI-compatible chat client: native tool calls or JSON ones when the server has none, retries, usage, cost."""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from typing import TYPE_CHECKING, Any, Literal

from sophrosyne.errors import ModelError, ModelNotConfigured
from sophrosyne.llm.conversation import Conversation, Reply, ToolCall, ToolSpec
from sophrosyne.llm.json_calls import calls_from_json
from sophrosyne.llm.usage import Usage, count_tokens
from sophrosyne.settings import Settings

if TYPE_CHECKING:
    import openai

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
    ) -> None:
        self.settings = settings or Settings()
        self.model = model
        self.base_url = base_url
        if not base_url and not api_key:
            raise ModelError(
                "OpenAI's endpoint needs an API key.",
                hint="Set OPENAI_API_KEY (or SOPHROSYNE_API_KEY), or point SOPHROSYNE_BASE_URL at a local server.",
            )
        # Local servers take any key; the SDK insists on one.
        self.api_key = api_key or "not-needed"
        self.mode: Literal["native", "json"] = "json" if self.settings.agent.tool_mode == "json" else "native"
        self._async: openai.AsyncOpenAI | None = None
        self._sync: openai.OpenAI | None = None

    @classmethod
    def from_settings(cls, settings: Settings, *, model: str | None = None, base_url: str | None = None) -> ModelClient:
        """The agent's model from settings (and command-line overrides); a one-line error when none is set."""
        name = model or settings.agent.model
        if not name:
            raise ModelNotConfigured(NOT_CONFIGURED)
        key = settings.agent.api_key.get_secret_value() if settings.agent.api_key else None
        return cls(name, base_url=base_url or settings.agent.base_url, api_key=key, settings=settings)

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
                response = await client.chat.completions.create(**request)
            except openai.APIError as exc:
                delay = self._after_failure(exc, retry, tools)
                if delay is not None:
                    retry += 1
                    await asyncio.sleep(delay)
                continue
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
                response = client.chat.completions.create(**request)
            except openai.APIError as exc:
                delay = self._after_failure(exc, retry, tools)
                if delay is not None:
                    retry += 1
                    time.sleep(delay)
                continue
            return self._reply(response, request, tools, started)

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embeddings of texts, in order, from the endpoint's `/embeddings`."""
        import openai

        client = self._sync_client()
        retry = 0
        while True:
            try:
                response = client.embeddings.create(model=self.model, input=texts)
            except openai.APIError as exc:
                delay = self._after_failure(exc, retry, None)
                if delay is not None:
                    retry += 1
                    time.sleep(delay)
                continue
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
                api_key=self.api_key, base_url=self.base_url, timeout=self.settings.agent.call_timeout_s, max_retries=0
            )
        return self._async

    def _sync_client(self) -> openai.OpenAI:
        if self._sync is None:
            import openai

            self._sync = openai.OpenAI(
                api_key=self.api_key, base_url=self.base_url, timeout=self.settings.agent.call_timeout_s, max_retries=0
            )
        return self._sync

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
                f"the model endpoint {self._endpoint} kept failing after {retry} retries "
                f"({status or type(exc).__name__}: {message}).",
                hint="Check the endpoint, or wait and try again.",
            ) from None
        after = _retry_after(getattr(exc, "response", None))
        backoff = self.settings.agent.backoff_s * (2**retry) * (1 + random.random() / 10)
        return min(self.settings.agent.max_wait_s, after if after is not None else backoff)

    def _reply(self, response: Any, request: dict[str, Any], tools: list[ToolSpec] | None, started: float) -> Reply:
        ms = (time.perf_counter() - started) * 1000
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
