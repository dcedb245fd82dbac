"""The model client over real HTTP against the scripted server: tool calls, JSON fallback, retries, usage, cost."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from fixtures.openai_server import Response, chat_reply, error_reply, scripted_server, tool_reply, usage
from sophrosyne.errors import ModelError
from sophrosyne.llm import Conversation, ModelClient, ToolSpec, calls_from_json, count_tokens, parse_json
from sophrosyne.settings import ModelPrice, Settings

TOOLS = [
    ToolSpec(
        "describe_table",
        "Columns of a table.",
        {"type": "object", "properties": {"table": {"type": "string"}}, "required": ["table"]},
    )
]
FAST = {"llm_backoff_s": 0.0, "llm_retries": 2}


def client(url: str, **settings: Any) -> ModelClient:
    return ModelClient("scripted-model", base_url=url, settings=Settings(**{**FAST, **settings}))


def ask(model: ModelClient, tools: list[ToolSpec] | None = TOOLS) -> Any:
    conversation = Conversation("You explore a database.")
    conversation.user("Which columns does employees have?")
    return converse(model, conversation, tools)


def converse(model: ModelClient, conversation: Conversation, tools: list[ToolSpec] | None) -> Any:
    """One turn in its own event loop; the client's connections close with it."""

    async def turn() -> Any:
        try:
            return await model.chat(conversation, tools)
        finally:
            await model.aclose()

    return asyncio.run(turn())


def test_native_tool_calls_with_usage_and_cost() -> None:
    with scripted_server(lambda p, b: tool_reply("describe_table", {"table": "employees"}, usage(120, 8))) as (
        url,
        received,
    ):
        model = client(url, llm_prices={"scripted": ModelPrice(input=2.0, output=10.0)})
        reply = ask(model)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("describe_table", {"table": "employees"})]
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.estimated) == (120, 8, False)
    assert reply.usage.cost == pytest.approx((120 * 2.0 + 8 * 10.0) / 1e6)  # priced by the longest prefix
    assert received[0]["tools"][0]["function"]["name"] == "describe_table"
    assert received[0]["model"] == "scripted-model"


def test_usage_is_counted_offline_when_the_server_sends_none() -> None:
    with scripted_server(lambda p, b: chat_reply("The table has eleven columns.")) as (url, _):
        reply = ask(client(url), tools=None)
    assert reply.usage.estimated
    assert reply.usage.completion_tokens == count_tokens("The table has eleven columns.", "scripted-model")
    assert reply.usage.prompt_tokens > 10
    assert reply.usage.cost is None


def test_offline_tokenizer_matches_o200k() -> None:
    assert count_tokens("hello world", "gpt-4o") == 2
    assert count_tokens("SELECT COUNT(*) FROM employees", "unknown-model") > 0


@pytest.mark.parametrize("headers", [{"Retry-After": "0"}, {"retry-after-ms": "20"}, {}])
def test_a_rate_limit_is_retried_honouring_retry_after(headers: dict[str, str]) -> None:
    answers: list[Any] = [error_reply(429, "slow down", headers), chat_reply("ok", usage(5, 1))]
    with scripted_server(lambda p, b: answers.pop(0)) as (url, received):
        reply = ask(client(url), tools=None)
    assert reply.text == "ok"
    assert len(received) == 2


def test_retry_after_sets_the_wait() -> None:
    answers: list[Any] = [error_reply(503, "busy", {"Retry-After": "0.3"}), chat_reply("ok", usage(5, 1))]
    with scripted_server(lambda p, b: answers.pop(0)) as (url, _):
        started = time.perf_counter()
        ask(client(url), tools=None)
    assert time.perf_counter() - started >= 0.3


def test_retries_run_out_with_a_clear_error() -> None:
    with (
        scripted_server(lambda p, b: error_reply(500, "broken")) as (url, received),
        pytest.raises(ModelError, match="kept failing after 2 retries"),
    ):
        ask(client(url), tools=None)
    assert len(received) == 3


def test_a_refused_request_is_not_retried() -> None:
    with (
        scripted_server(lambda p, b: error_reply(401, "bad key")) as (url, received),
        pytest.raises(ModelError, match="refused the request \\(401\\): bad key"),
    ):
        ask(client(url), tools=None)
    assert len(received) == 1


def _no_tools(path: str, body: dict[str, Any]) -> Any:
    if "tools" in body:
        return error_reply(400, '"auto" tool choice requires --enable-auto-tool-choice to be set')
    return chat_reply('Sure.\n```json\n{"tool": "describe_table", "arguments": {"table": "employees"}}\n```')


def test_a_server_that_refuses_tools_gets_json_tool_calls_from_then_on() -> None:
    with scripted_server(_no_tools) as (url, received):
        model = client(url)
        first = ask(model)
        second = ask(model)
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("describe_table", {"table": "employees"})]
    assert first.mode == second.mode == "json"
    assert ["tools" in r for r in received] == [True, False, False]
    assert '{"tool": "<tool name>"' in received[1]["messages"][0]["content"]
    assert "describe_table" in received[1]["messages"][0]["content"]


def test_json_mode_by_setting_writes_calls_and_results_as_text() -> None:
    with scripted_server(lambda p, b: chat_reply('{"tool": "describe_table", "arguments": {"table": "x"}}')) as (
        url,
        received,
    ):
        model = client(url, llm_tool_mode="json")
        conversation = Conversation("sys")
        conversation.user("q")
        reply = converse(model, conversation, TOOLS)
        conversation.assistant(reply)
        conversation.tool_result(reply.tool_calls[0], "3 columns")
        converse(model, conversation, TOOLS)
    assert all("tools" not in r for r in received)
    sent = received[1]["messages"]
    assert sent[2] == {"role": "assistant", "content": '{"tool": "describe_table", "arguments": {"table": "x"}}'}
    assert sent[3] == {"role": "user", "content": "Result of describe_table:\n3 columns"}


def test_native_history_sends_tool_messages() -> None:
    with scripted_server(lambda p, b: tool_reply("describe_table", {"table": "x"})) as (url, received):
        model = client(url)
        conversation = Conversation("sys")
        conversation.user("q")
        reply = converse(model, conversation, TOOLS)
        conversation.assistant(reply)
        conversation.tool_result(reply.tool_calls[0], "3 columns")
        converse(model, conversation, TOOLS)
    sent = received[1]["messages"]
    assert sent[2]["tool_calls"][0]["id"] == reply.tool_calls[0].id
    assert sent[3] == {"role": "tool", "tool_call_id": reply.tool_calls[0].id, "content": "3 columns"}


def test_bad_arguments_are_kept_for_the_solver_to_report() -> None:
    def bad(path: str, body: dict[str, Any]) -> dict[str, Any]:
        reply = tool_reply("describe_table", {})
        reply["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = "{table: employees"
        return reply

    with scripted_server(bad) as (url, _):
        call = ask(client(url)).tool_calls[0]
    assert call.arguments == {} and call.bad_arguments == "{table: employees"


def test_sync_chat_and_embeddings() -> None:
    def reply(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path.endswith("/embeddings"):
            count = len(body["input"])
            rows = [{"object": "embedding", "index": i, "embedding": [float(i), 1.0]} for i in range(count)]
            return {"object": "list", "data": rows[::-1], "model": "m", "usage": usage(3, 0)}
        return chat_reply("employees.department")

    with scripted_server(reply) as (url, _):
        model = client(url)
        conversation = Conversation()
        conversation.user("columns?")
        assert model.chat_sync(conversation).text == "employees.department"
        assert model.embed(["a", "b"]) == [[0.0, 1.0], [1.0, 1.0]]


def test_no_model_configured_names_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SOPHROSYNE_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "SOPHROSYNE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ModelError, match="SOPHROSYNE_MODEL") as error:
        ModelClient.from_settings(Settings())
    assert "\n" not in str(error.value)
    with pytest.raises(ModelError, match="needs an API key"):
        ModelClient.from_settings(Settings(model="gpt-4o-mini"))


def test_json_is_found_in_prose_and_fences() -> None:
    assert parse_json('I will call it: {"tool": "a", "arguments": {}} now') == {"tool": "a", "arguments": {}}
    assert parse_json("```json\n[1, 2]\n```") == [1, 2]
    assert parse_json("no json here") is None
    assert [c.name for c in calls_from_json('[{"tool": "a"}, {"name": "b", "arguments": {"x": 1}}]')] == ["a", "b"]


def test_directive_inference_and_the_embedder_go_through_the_client_and_its_retries() -> None:
    from sophrosyne.directives import LLMColumnInference
    from sophrosyne.index import OpenAIEmbedder
    from sophrosyne.schema.catalog import Catalog

    def reply(path: str, body: dict[str, Any]) -> Any:
        if len(received) == 1:
            return error_reply(429, "slow down", {"Retry-After": "0"})
        if path.endswith("/embeddings"):
            return {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [3.0, 4.0]}]}
        return chat_reply("- employees.department\nnot a column!")

    with scripted_server(reply) as (url, received):
        names = LLMColumnInference(url, "small-model").infer("Who works in ops?", "", Catalog(tables={}))
        assert names == ["employees.department"]
        assert received[-1]["temperature"] == 0
        received.clear()
        vectors = OpenAIEmbedder(url, "embedder").embed(["ops"])
    assert vectors.shape == (1, 2) and abs(vectors[0, 0] - 0.6) < 1e-6 and abs(vectors[0, 1] - 0.8) < 1e-6
    assert len(received) == 2  # the 429, then the answer


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_connection_fails_at_once_naming_the_endpoint_and_model() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    model = ModelClient("scripted-model", base_url=url, settings=Settings(llm_retries=4, llm_backoff_s=5.0))
    started = time.monotonic()
    with pytest.raises(ModelError) as caught:
        ask(model)
    # No retry: one would wait 5 s first (the bound was 1 s with a 1 s backoff, and a refusal took 1.7 s at load 20).
    assert time.monotonic() - started < 4.0
    assert f"the model endpoint {url} (model scripted-model) cannot be reached" in str(caught.value)
    assert "refused" in str(caught.value) and "SOPHROSYNE_BASE_URL" in (caught.value.hint or "")


@pytest.mark.parametrize("content_type", ["application/json", "text/html"])
def test_a_body_that_is_not_json_is_named_with_the_endpoint_and_model(content_type: str) -> None:
    page = Response(200, {}, {"Content-Type": content_type}, raw=b"<html><body>Welcome to nginx!</body></html>")
    with scripted_server(lambda p, b: page) as (url, _):
        with pytest.raises(ModelError) as caught:
            ask(client(url))
        with pytest.raises(ModelError, match="not JSON"):
            client(url).chat_sync(Conversation("s"), None)
    text = str(caught.value)
    assert url in text and "scripted-model" in text and "not JSON" in text and "/v1" in (caught.value.hint or "")


def test_a_slow_model_is_said_while_it_is_awaited_and_a_hung_one_is_bounded() -> None:
    def slow(path: str, body: dict[str, Any]) -> dict[str, Any]:
        time.sleep(0.3)
        return chat_reply("done")

    lines: list[str] = []
    with scripted_server(slow) as (url, _):
        model = client(url, llm_wait_notice_s=0.1)
        model.on_wait = lines.append
        assert ask(model, None).text == "done"
        assert lines and lines[0].startswith(f"waiting for the model scripted-model at {url}: ")
        lines.clear()
        assert model.chat_sync(Conversation("s"), None).text == "done"  # the blocking call says it too
        assert lines and "waiting for the model scripted-model" in lines[0]
        hung = client(url, llm_timeout_s=0.2, llm_retries=0)
        with pytest.raises(
            ModelError, match=r"\(model scripted-model\) kept failing after 0 retries .*no answer within"
        ):
            ask(hung, None)


def test_each_retry_is_said_with_its_wait() -> None:
    answers = iter([error_reply(503, "overloaded"), chat_reply("ok")])
    lines: list[str] = []
    with scripted_server(lambda p, b: next(answers)) as (url, _):
        model = client(url)
        model.on_wait = lines.append
        assert ask(model, None).text == "ok"
    assert lines == [f"the model endpoint {url} (model scripted-model) failed (503: overloaded); retry 1 of 2 in 0.0 s"]
