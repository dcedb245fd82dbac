"""list_sources: the databases a caller may name, each with its size and, given a question, its relevance."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from sophrosyne.base.data_blocks import close_data, open_data
from sophrosyne.base.text import counted
from sophrosyne.tools.base import Context, Result


class SourceRelevance(Result):
    """Whether a source is likely irrelevant to a question: no table of it scores as a kept table would."""

    likely_irrelevant: bool
    best_table: str | None = None
    score: float = 0.0
    reason: str = ""


class SourceInfo(Result):
    name: str
    dialect: str
    tables: int
    url: str
    description: str = ""
    relevance: SourceRelevance | None = None

    def agent_lines(self, nonce: str) -> list[str]:
        return [_source_line(self).removeprefix("- ") + f" at {self.url}"]


class SourceList(Result):
    sources: list[SourceInfo]

    def agent_lines(self, nonce: str) -> list[str]:
        # Descriptions are the administrator's; table names in the reasons come from the databases.
        lines = [f"{counted(len(self.sources), 'source')}:", open_data(nonce), *(_source_line(s) for s in self.sources)]
        lines.append(close_data(nonce))
        if any(s.relevance and s.relevance.likely_irrelevant for s in self.sources):
            lines.append("Skip the sources marked likely irrelevant unless the evidence clearly needs them.")
        if len(self.sources) > 1:
            lines.append("Name the source in every other tool call: source=NAME.")
        return lines


def list_sources(
    env: Context,
    question: Annotated[
        str | None, Field(description="The user's question: sources likely irrelevant are named.")
    ] = None,
    knowledge: Annotated[str | None, Field(description="Evidence for the question.")] = None,
) -> SourceList:
    """The databases served, with dialect, table count and description.

    Example: list_sources(question="Which heroes have blue eyes?")
    """
    # One database alone; a server of several names, describes and ranks them (Sources.list_sources), each
    # with its `source_info`.
    return SourceList(sources=[source_info(env)])


def source_info(env: Context) -> SourceInfo:
    """One database as list_sources shows it."""
    return SourceInfo(name=env.name, dialect=env.dialect, tables=len(env.catalog.tables), url=env.url)


def _source_line(r: SourceInfo) -> str:
    desc = f" — {r.description}" if r.description else ""
    line = f"- {r.name} ({r.dialect}, {r.tables} tables){desc}"
    if r.relevance is not None:
        line += f" [{'likely irrelevant' if r.relevance.likely_irrelevant else 'relevant'}: {r.relevance.reason}]"
    return line
