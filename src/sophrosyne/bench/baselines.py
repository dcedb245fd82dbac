"""Baselines of the directives benchmark: the paper's method, top-1 table per inferred column name."""

from __future__ import annotations

from sophrosyne.base.words import split_identifier
from sophrosyne.directives import Directives, TableDirective
from sophrosyne.directives.knowledge import Knowledge, described_phrases, infer_identifiers, knowledge_text
from sophrosyne.index.lexicon import lexicon_for
from sophrosyne.index.schema_index import SchemaIndex
from sophrosyne.schema.catalog import Catalog

PAPER_RULES_TOP1 = "paper_rules_top1"
PAPER_LLM_TOP1 = "paper_llm_top1"


def top1_directives(question: str, queries: list[str], catalog: Catalog, index: SchemaIndex, mode: str) -> Directives:
    """Each query searched in the hybrid column index, the table of its top hit kept, every other table
    flagged; no foreign-key bridging. Without queries the question is the one query."""
    relevant: set[str] = set()
    for query in queries or [question]:
        hits = index.search(query, k=20, visible=catalog)
        if hits:
            relevant.add(hits[0].table)
    flagged = [
        TableDirective(t, "no inferred column name retrieves it", "high", 1.0)
        for t in catalog.tables
        if t not in relevant
    ]
    return Directives(flagged, sorted(relevant), mode=mode)


def paper_rules_top1(question: str, knowledge: Knowledge, catalog: Catalog, index: SchemaIndex) -> Directives:
    """The paper's method with rules standing in for its LLM column inference: column names from the knowledge
    (code-like identifiers, plain words that are column names, the described side of `A refers to B`), then
    the top-1 table of each."""
    text = knowledge_text(knowledge)
    strong, weak = infer_identifiers(text)
    lexicon = lexicon_for(catalog)
    names = [*strong, *(w for w in weak if w.lower() in lexicon.raw_columns)]
    queries = [" ".join(split_identifier(n)) for n in dict.fromkeys(names)]
    queries += described_phrases(text)
    return top1_directives(question, queries, catalog, index, PAPER_RULES_TOP1)


def paper_llm_top1(question: str, names: list[str], catalog: Catalog, index: SchemaIndex) -> Directives:
    """The paper's method as written: the column names a model inferred, then the top-1 table of each."""
    queries = [" ".join(split_identifier(n)) for n in dict.fromkeys(names)]
    return top1_directives(question, queries, catalog, index, PAPER_LLM_TOP1)
