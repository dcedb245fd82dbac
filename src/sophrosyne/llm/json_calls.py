"""Tool calls read back from a model's text, for servers without native tool calling (JSON mode)."""

from __future__ import annotations

import json
import re
from typing import Any

from sophrosyne.llm.conversation import ToolCall


def parse_json(text: str) -> Any:
    """The first JSON value in a model's text (a bare object, or one inside a ``` fence); None if there is none."""
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(text)
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for match in re.finditer(r"[\[{]", candidate):
            try:
                value, _ = decoder.raw_decode(candidate[match.start() :])
            except ValueError:
                continue
            return value
    return None


def calls_from_json(text: str) -> list[ToolCall]:
    """Tool calls written as JSON (`{"tool": ..., "arguments": {...}}`, or a list of them)."""
    value = parse_json(text)
    items = value if isinstance(value, list) else [value]
    calls = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and isinstance(item.get("tool") or item.get("name"), str):
            arguments = item.get("arguments", item.get("args", {}))
            name = str(item.get("tool") or item.get("name"))
            if isinstance(arguments, dict):
                calls.append(ToolCall(f"json-{i}", name, arguments))
            else:
                calls.append(ToolCall(f"json-{i}", name, {}, json.dumps(arguments)))
    return calls
