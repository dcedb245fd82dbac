"""The agent's model: a chat client for any OpenAI-compatible endpoint, used by the agent, directives and indexes.

- `conversation`: the messages of one exchange, sent as native tool calls or as JSON text
- `json_calls`: tool calls read back from a model's text (JSON mode)
- `usage`: tokens a call used, reported or counted offline
- `client`: `ModelClient`, the calls themselves: retries, JSON mode when native tool calls fail, cost
"""

from sophrosyne.llm.client import ModelClient
from sophrosyne.llm.conversation import Conversation, Message, Reply, ToolCall, ToolSpec
from sophrosyne.llm.json_calls import calls_from_json, parse_json
from sophrosyne.llm.usage import Usage, count_tokens

__all__ = [
    "Conversation",
    "Message",
    "ModelClient",
    "Reply",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "calls_from_json",
    "count_tokens",
    "parse_json",
]
