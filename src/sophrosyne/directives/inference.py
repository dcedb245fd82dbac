"""Column inference by a model: the paper's inexpensive LLM names the columns a question needs."""

from __future__ import annotations

from sophrosyne.directives.knowledge import IDENTIFIER
from sophrosyne.errors import ModelError
from sophrosyne.schema.catalog import Catalog


class LLMColumnInference:
    """Column names inferred by an inexpensive model behind an OpenAI-compatible endpoint (through the
    agent's model client), as the paper prompts for them. Used only when configured; any failure means no
    names."""

    PROMPT = (
        "You are given a database schema, a question and knowledge about it. List the columns (as "
        "table.column) that a SQL query answering the question would use. Answer with one table.column per "
        "line and nothing else.\n\nSchema:\n{schema}\n\nQuestion: {question}\nKnowledge: {knowledge}"
    )

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout_s: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout_s = timeout_s

    def infer(self, question: str, knowledge: str, catalog: Catalog) -> list[str]:
        from sophrosyne.llm import Conversation, ModelClient
        from sophrosyne.settings import Agent, Settings

        schema = "\n".join(f"{t.name}({', '.join(t.column_names)})" for t in catalog.tables.values())[:12000]
        prompt = self.PROMPT.format(schema=schema, question=question, knowledge=knowledge or "(none)")
        conversation = Conversation()
        conversation.user(prompt)
        # It runs inside list_tables: one quick retry at most, so a failing endpoint costs little.
        settings = Settings(
            agent=Agent(call_timeout_s=self.timeout_s, call_retries=1, backoff_s=0.2, max_wait_s=1.0, temperature=0)
        )
        client = ModelClient(self.model, base_url=self.base_url, api_key=self.api_key, settings=settings)
        try:
            text = client.chat_sync(conversation).text
        except ModelError:
            return []
        finally:
            client.close()
        names = [line.strip().strip("-*` ").strip() for line in text.splitlines()]
        return [n for n in names if n and IDENTIFIER.fullmatch(n)]
