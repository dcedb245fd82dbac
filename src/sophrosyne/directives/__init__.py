"""Directives: from a question and its knowledge entries to the tables that are likely irrelevant to it.

knowledge (reading the text), signals (what points at each table), thesaurus (WordNet's nouns: table-name
words related to the question's), short_names (question words a table's name writes in short), scoring (the
fitted model), accounting (a home for each word of the question, or none), decision (keep, bridges, tiers,
reasons), links (linking tables kept with their ends), pairs (dictionary and fact tables kept together), model
(model.json and the hand-set knobs), inference (an optional model that names columns), oracle (the tables a
reference query reads).
"""

from sophrosyne.directives.decision import (
    Directives,
    TableDirective,
    compute_directives,
    decide_directives,
    keep_threshold,
)
from sophrosyne.directives.inference import LLMColumnInference
from sophrosyne.directives.knowledge import infer_identifiers, knowledge_units
from sophrosyne.directives.model import FEATURES, DirectiveModel, DirectiveSettings, Fit, fitted_model
from sophrosyne.directives.oracle import gold_tables, oracle_directives
from sophrosyne.directives.question import Question
from sophrosyne.directives.scoring import TableScores, score_tables

__all__ = [
    "FEATURES",
    "DirectiveModel",
    "DirectiveSettings",
    "Directives",
    "Fit",
    "LLMColumnInference",
    "Question",
    "TableDirective",
    "TableScores",
    "compute_directives",
    "decide_directives",
    "fitted_model",
    "gold_tables",
    "infer_identifiers",
    "keep_threshold",
    "knowledge_units",
    "oracle_directives",
    "score_tables",
]
