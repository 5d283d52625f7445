"""Warm query latency at 5k (SciFact), 100k and 1M chunks of 256 dimensions.

Everything is measured in one long-lived process, side by side, with a numpy brute-force
top-k as the physical-limit reference and DuckDB's own ``ORDER BY array_cosine_distance``
scan for comparison. Query embedding is excluded (vectors are precomputed), so only storage
and ranking are timed; store calls include fetching the 10 result rows.

    python bench/query_latency.py --quick        # 5k and 100k
    python bench/query_latency.py                # 5k, 100k and 1M
    python bench/query_latency.py --sizes 5000 --repeat 500

Writes raw numbers to bench/out/query_latency.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np

from duckdb_vectors import VectorStore
from duckdb_vectors.tokenizer import tokenize

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("DUCKDB_VECTORS_SHARED", HERE.parent.parent / "shared"))
SCIFACT = SHARED / "evaldata" / "ir" / "scifact"
STATIC_MODEL = SHARED / "models" / "static-256-wordllama"
BACKEND = "fastembed:minishlab/potion-multilingual-128M"
DIMENSION = 256
TOP_K = 10
BATCH = 50_000


def scifact() -> tuple[list[str], list[str], list[str]]:
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt") as handle:
        documents = [json.loads(line) for line in handle]
    queries = [json.loads(line)["text"] for line in (SCIFACT / "queries.jsonl").open()]
    texts = [f"{d['title']}\n\n{d['text']}" for d in documents]
    return [d["_id"] for d in documents], texts, queries


def build_scifact(path: Path) -> tuple[VectorStore, list[str]]:
    ids, texts, queries = scifact()
    store = VectorStore(path, BACKEND, model_path=STATIC_MODEL)
    store.add_texts(texts, ids=ids)
    return store, queries


def build_synthetic(path: Path, size: int, seed: int = 7) -> tuple[VectorStore, list[str]]:
    """``size`` chunks: random unit vectors and ~80-word texts drawn from SciFact's word counts."""
    _, texts, _ = scifact()
    counts = Counter(token for text in texts for token in tokenize(text))
    words = np.array(list(counts))
    probabilities = np.array(list(counts.values()), dtype=np.float64)
    probabilities /= probabilities.sum()
    rng = np.random.default_rng(seed)
    store = VectorStore(path, BACKEND, model_path=STATIC_MODEL)
    for start in range(0, size, BATCH):
        count = min(BATCH, size - start)
        vectors = rng.normal(size=(count, DIMENSION)).astype(np.float32)
        picks = rng.choice(len(words), size=(count, 80), p=probabilities)
        store.put_vectors(
            [
                {
                    "key": f"c{start + i}",
                    "data": {"float32": vectors[i]},
                    "text": " ".join(words[picks[i]]),
                    "metadata": {"n": start + i},
                }
                for i in range(count)
            ]
        )
        print(f"  wrote {start + count:,}/{size:,}", flush=True)
    # Queries: 2-5 mid-frequency words, as people type them.
    middle = words[np.argsort(-probabilities)[50:5000]]
    queries = [" ".join(rng.choice(middle, size=rng.integers(2, 6))) for _ in range(200)]
    return store, queries


def timed(function: Callable[[int], object], repeat: int) -> dict[str, float]:
    for i in range(min(5, repeat)):
        function(i)
    samples = []
    for i in range(repeat):
        started = time.perf_counter()
        function(i)
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return {
        "p50_ms": statistics.median(samples),
        "p95_ms": samples[min(len(samples) - 1, int(len(samples) * 0.95))],
        "n": repeat,
    }


def measure(path: Path, store: VectorStore, queries: list[str], repeat: int) -> dict[str, object]:
    size = store.count()
    rng = np.random.default_rng(1)
    query_vectors = store.embedder.embed_query(queries[: repeat + 5]).astype(np.float32)
    if size > 10_000:  # synthetic vectors are random: query near stored ones instead
        query_vectors = rng.normal(size=(repeat + 5, DIMENSION)).astype(np.float32)
    query_vectors /= np.linalg.norm(query_vectors, axis=1, keepdims=True)
    store.close()

    results: dict[str, object] = {"chunks": size, "file_mb": path.stat().st_size / 1e6}
    reader = VectorStore(path, model_path=STATIC_MODEL, read_only=True)
    started = time.perf_counter()
    reader.warm_up()
    results["memory_index_load_s"] = time.perf_counter() - started
    matrix = reader._memory.vectors.matrix  # the same normalised float32 matrix numpy gets

    def numpy_top(i: int) -> object:
        scores = matrix @ query_vectors[i % len(query_vectors)]
        top = np.argpartition(-scores, TOP_K)[:TOP_K]
        return top[np.argsort(-scores[top])]

    text = lambda i: queries[i % len(queries)]  # noqa: E731
    vector = lambda i: query_vectors[i % len(query_vectors)]  # noqa: E731
    results["numpy_brute_force"] = timed(numpy_top, repeat)
    results["memory_vector"] = timed(lambda i: reader.query_vectors(vector(i), TOP_K), repeat)
    results["memory_hybrid"] = timed(
        lambda i: reader.query(text(i), TOP_K, vector=vector(i)), repeat
    )
    reader.close()

    sql_repeat = max(5, repeat // 5)
    one_shot = VectorStore(path, model_path=STATIC_MODEL, read_only=True, memory_index=False)
    results["sql_vector"] = timed(lambda i: one_shot.query_vectors(vector(i), TOP_K), sql_repeat)
    results["sql_hybrid"] = timed(
        lambda i: one_shot.query(text(i), TOP_K, vector=vector(i)), sql_repeat
    )
    one_shot.close()

    raw = duckdb.connect(str(path), read_only=True)
    results["duckdb_order_by_scan"] = timed(
        lambda i: raw.execute(
            f"SELECT chunk_id FROM chunks ORDER BY array_cosine_distance(embedding, "
            f"$1::FLOAT[{DIMENSION}]) LIMIT {TOP_K}",
            [vector(i).tolist()],
        ).fetchall(),
        sql_repeat,
    )
    raw.close()
    reference = results["numpy_brute_force"]["p50_ms"]  # type: ignore[index]
    for name in ("memory_vector", "memory_hybrid", "sql_vector", "duckdb_order_by_scan"):
        entry = results[name]
        entry["vs_numpy"] = entry["p50_ms"] / reference  # type: ignore[index]
    results["hybrid_vs_vector"] = (
        results["memory_hybrid"]["p50_ms"] / results["memory_vector"]["p50_ms"]  # type: ignore[index]
    )
    return results


def table(runs: list[dict[str, object]]) -> str:
    names = [
        "numpy_brute_force",
        "memory_vector",
        "memory_hybrid",
        "sql_vector",
        "sql_hybrid",
        "duckdb_order_by_scan",
    ]
    lines = [
        "| path | "
        + " | ".join(f"{r['chunks']:,} chunks p50 / p95 ms (x numpy)" for r in runs)
        + " |",
        "|---|" + "---|" * len(runs),
    ]
    for name in names:
        cells = []
        for run in runs:
            entry = run[name]
            ratio = f" ({entry['vs_numpy']:.2f}x)" if "vs_numpy" in entry else ""
            cells.append(f"{entry['p50_ms']:.3f} / {entry['p95_ms']:.3f}{ratio}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append(
        "| memory index load (s) | "
        + " | ".join(f"{r['memory_index_load_s']:.2f}" for r in runs)
        + " |"
    )
    lines.append("| file size (MB) | " + " | ".join(f"{r['file_mb']:.0f}" for r in runs) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5k and 100k only")
    parser.add_argument("--sizes", type=int, nargs="*", help="chunk counts (5000 = SciFact)")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "query_latency.json")
    arguments = parser.parse_args()
    sizes = arguments.sizes or ([5000, 100_000] if arguments.quick else [5000, 100_000, 1_000_000])
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        for size in sizes:
            path = Path(scratch) / f"bench-{size}.duckdb"
            print(f"building {size:,} chunks ...", flush=True)
            store, queries = build_scifact(path) if size == 5000 else build_synthetic(path, size)
            repeat = arguments.repeat if size <= 100_000 else max(20, arguments.repeat // 5)
            runs.append(measure(path, store, queries, repeat))
            print(json.dumps(runs[-1], indent=1), flush=True)
    report = {
        "machine": f"{platform.machine()} {os.cpu_count()} cores, {platform.python_version()}",
        "duckdb": duckdb.__version__,
        "numpy": np.__version__,
        "runs": runs,
    }
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(report, indent=1))
    print(table(runs))


if __name__ == "__main__":
    main()
