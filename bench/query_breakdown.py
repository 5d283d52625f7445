"""Where a query's time goes: embedding (static and ONNX models), vector ranking, BM25 ranking,
fusion, and building the results — on BEIR SciFact (5,183 chunks), in one process.

    python bench/query_breakdown.py

Writes bench/out/query_breakdown.json and prints a Markdown table of medians.
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from duckdb_vectors import FusionSettings, VectorStore, get_embedder
from duckdb_vectors.search.answer import Scope
from duckdb_vectors.search.ranking import fuse
from duckdb_vectors.tokenizer import tokenize

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("DUCKDB_VECTORS_SHARED", HERE.parent.parent / "shared"))
SCIFACT = SHARED / "evaldata" / "ir" / "scifact"
STATIC = SHARED / "models" / "static-256-wordllama"
ONNX = SHARED / "models" / "onnx-minilm-l6-v2-int8"
REPEAT = 300


def median_ms(step: Callable[[int], object], repeat: int = REPEAT) -> float:
    for i in range(10):
        step(i)
    samples = []
    for i in range(repeat):
        started = time.perf_counter()
        step(i)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def main() -> None:
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt") as handle:
        documents = [json.loads(line) for line in handle]
    queries = [json.loads(line)["text"] for line in (SCIFACT / "queries.jsonl").open()]
    static = get_embedder("fastembed:minishlab/potion-multilingual-128M", model_path=STATIC)
    onnx = get_embedder("fastembed:sentence-transformers/all-MiniLM-L6-v2", model_path=ONNX)
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        store = VectorStore(Path(scratch) / "s.duckdb", embedder=static)
        store.add_texts(
            [f"{d['title']}\n{d['text']}" for d in documents], ids=[d["_id"] for d in documents]
        )
        store.warm_up()
        memory = store._searcher()
        vectors = static.embed_query(queries[: REPEAT + 10])
        terms = [tokenize(q) for q in queries[: REPEAT + 10]]
        fusion, everything = FusionSettings(), Scope()
        by_vector = [memory.vector_ranking(v, 100, everything) for v in vectors]
        by_text = [memory.lexical_ranking(t, 100, everything) for t in terms]
        fused = [fuse(v, t, fusion) for v, t in zip(by_vector, by_text, strict=True)]

        results["embed query, static 256-dim"] = median_ms(
            lambda i: static.embed_query([queries[i]])
        )
        results["embed query, ONNX MiniLM-L6 int8 384-dim"] = median_ms(
            lambda i: onnx.embed_query([queries[i]])
        )
        results["tokenize query"] = median_ms(lambda i: tokenize(queries[i]))
        results["vector ranking (top 100)"] = median_ms(
            lambda i: memory.vector_ranking(vectors[i], 100, everything)
        )
        results["BM25 ranking (top 100)"] = median_ms(
            lambda i: memory.lexical_ranking(terms[i], 100, everything)
        )
        results["fusion"] = median_ms(lambda i: fuse(by_vector[i], by_text[i], fusion))
        results["fetch 10 chunks"] = median_ms(lambda i: memory.chunks(fused[i].keys[:10]))
        results["whole query(), vector given"] = median_ms(
            lambda i: store.query(queries[i], 10, vector=vectors[i])
        )
        results["whole query(), static embedding included"] = median_ms(
            lambda i: store.query(queries[i], 10)
        )
        store.close()
    out = HERE / "out" / "query_breakdown.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print("| step | p50 ms |\n|---|---|")
    for step, value in results.items():
        print(f"| {step} | {value:.3f} |")


if __name__ == "__main__":
    main()
