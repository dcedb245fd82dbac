"""The messages of one exchange with a model, sent as native tool calls or written out as JSON text."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from sophrosyne.llm.usage import Usage

Role = Literal["system", "user", "assistant", "tool"]

JSON_PROTOCOL = """\
You call tools by replying with exactly one JSON object and nothing else:
{{"tool": "<tool name>", "arguments": {{...}}}}
The result comes back in the next message. The tools:
{tools}"""


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: name, description and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    # Set when the model's arguments were not a JSON object: the solver tells the model so.
    bad_arguments: str | None = None


@dataclass
class Message:
    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    call: ToolCall | None = None  # the call a tool message answers


@dataclass
class Reply:
    text: str
    tool_calls: list[ToolCall]
    usage: Usage
    ms: float
    mode: Literal["native", "json"]


class Conversation:
    """The messages of one exchange, kept neutral so they can be sent as native tool calls or as JSON."""

    def __init__(self, system: str | None = None) -> None:
        self.messages: list[Message] = [Message("system", system)] if system else []

    def user(self, text: str) -> None:
        self.messages.append(Message("user", text))

    def assistant(self, reply: Reply) -> None:
        self.messages.append(Message("assistant", reply.text, list(reply.tool_calls)))

    def tool_result(self, call: ToolCall, text: str) -> None:
        self.messages.append(Message("tool", text, call=call))

    def copy(self) -> Conversation:
        other = Conversation()
        other.messages = list(self.messages)
        return other

    def to_openai(self, mode: Literal["native", "json"], tools: list[ToolSpec] | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for m in self.messages:
            if mode == "json" or not tools:
                out.append(_plain(m))
            elif m.role == "assistant" and m.tool_calls:
                calls = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c in m.tool_calls
                ]
                out.append({"role": "assistant", "content": m.content or None, "tool_calls": calls})
            elif m.role == "tool" and m.call is not None:
                out.append({"role": "tool", "tool_call_id": m.call.id, "content": m.content})
            else:
                out.append({"role": m.role, "content": m.content})
        if mode == "json" and tools:
            listed = "\n".join(f"- {t.name}: {t.description}\n  arguments: {json.dumps(t.parameters)}" for t in tools)
            protocol = JSON_PROTOCOL.format(tools=listed)
            if out and out[0]["role"] == "system":
                out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{protocol}"}
            else:
                out.insert(0, {"role": "system", "content": protocol})
        return out


def _plain(m: Message) -> dict[str, Any]:
    """A message for a server without tool calling: calls and results are written out as text."""
    if m.role == "assistant" and m.tool_calls:
        calls = [{"tool": c.name, "arguments": c.arguments} for c in m.tool_calls]
        return {"role": "assistant", "content": json.dumps(calls[0] if len(calls) == 1 else calls)}
    if m.role == "tool":
        name = m.call.name if m.call else "tool"
        return {"role": "user", "content": f"Result of {name}:\n{m.content}"}
    return {"role": m.role, "content": m.content}
