"""Offline schema and value index: BM25 and embeddings over columns, fused by RRF; distinct values for grounding."""

from sophrosyne.index.embedders import (
    Embedder,
    MiniLMOnnxEmbedder,
    OpenAIEmbedder,
    WordLlamaEmbedder,
    default_embedder,
)
from sophrosyne.index.fusion import reciprocal_rank_fusion
from sophrosyne.index.schema_index import ColumnDoc, ColumnHit, SchemaIndex, load_or_build, schema_key
from sophrosyne.index.values import ValueBudget, ValueIndex

__all__ = [
    "ColumnDoc",
    "ColumnHit",
    "Embedder",
    "MiniLMOnnxEmbedder",
    "OpenAIEmbedder",
    "SchemaIndex",
    "ValueBudget",
    "ValueIndex",
    "WordLlamaEmbedder",
    "default_embedder",
    "load_or_build",
    "reciprocal_rank_fusion",
    "schema_key",
]
