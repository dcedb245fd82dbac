"""Column inference by a model: the paper's inexpensive LLM names the columns a question needs."""

from __future__ import annotations

import json
import urllib.request

from sophrosyne.catalog import Catalog
from sophrosyne.directives.knowledge import IDENTIFIER


class LLMColumnInference:
    """Column names inferred by an inexpensive model behind an OpenAI-compatible `/chat/completions`
    endpoint, as the paper prompts for them. Used only when configured; any failure means no names."""

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
        schema = "\n".join(f"{t.name}({', '.join(t.column_names)})" for t in catalog.tables.values())[:12000]
        prompt = self.PROMPT.format(schema=schema, question=question, knowledge=knowledge or "(none)")
        body = {"model": self.model, "messages": [{"role": "user", "content": prompt}], "temperature": 0}
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                text = json.loads(response.read())["choices"][0]["message"]["content"] or ""
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            return []
        names = [line.strip().strip("-*` ").strip() for line in text.splitlines()]
        return [n for n in names if n and IDENTIFIER.fullmatch(n)]
