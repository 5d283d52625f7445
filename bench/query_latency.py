"""Warm query latency at 5k (SciFact), 100k and 1M chunks of 256 dimensions.

Each size's index is built once per checkout measured. Then reader processes take turns
(``--rounds``, alternating with ``--baseline``'s where given): each opens the index read-only,
times ``warm_up()`` and its RSS after it, and then times, query by query, vector-only and hybrid
search from the in-memory index, the same from SQL (``memory_index=False``, the path a one-shot
process takes), numpy's exact scan of the same normalised vectors (the reference) and DuckDB's
own ``ORDER BY array_cosine_distance``. Query vectors are given, so the embedding is left out;
the store's calls include building the ten hits. 5k is BEIR SciFact (real queries); 100k and
1M are random unit vectors with ~80-word texts drawn from SciFact's word frequencies.

    python bench/query_latency.py --quick                       # 5k and 100k
    python bench/query_latency.py                               # 5k, 100k and 1M
    python bench/query_latency.py --sizes 100000 --baseline /work/baseline --rounds 5

``--baseline`` is another checkout with its own ``.venv``. Writes bench/out/query_latency.json
(or ``--out``) and prints a Markdown table of medians.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    BACKEND,
    DIMENSION,
    MODEL,
    OUT,
    SHARED,
    alternate,
    latencies,
    machine,
    median,
    rss_mb,
    run_function,
    timed,
    tree_python,
    write_json,
)

SCIFACT = SHARED / "evaldata" / "ir" / "scifact"
TOP_K = 10
BATCH = 50_000
PATHS = ("numpy", "memory_vector", "memory_hybrid", "sql_vector", "sql_hybrid", "duckdb_scan")


def scifact() -> tuple[list[str], list[str], list[str]]:
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt") as handle:
        documents = [json.loads(line) for line in handle]
    queries = [json.loads(line)["text"] for line in (SCIFACT / "queries.jsonl").open()]
    texts = [f"{d['title']}\n\n{d['text']}" for d in documents]
    return [d["_id"] for d in documents], texts, queries


def build(path: str, size: int) -> dict[str, Any]:
    """The index of ``size`` chunks at ``path``, and its queries beside it (``.json``)."""
    from duckdb_vectors import VectorStore
    from duckdb_vectors.tokenizer import tokenize

    ids, texts, queries = scifact()
    with VectorStore(path, BACKEND, model_path=MODEL) as store:
        if size == 5000:
            store.add_texts(texts, ids=ids)
            vectors = store.embedder.embed_query(queries)
        else:
            counts = Counter(token for text in texts for token in tokenize(text))
            words = np.array(list(counts))
            probabilities = np.array(list(counts.values()), dtype=np.float64)
            probabilities /= probabilities.sum()
            rng = np.random.default_rng(7)
            for start in range(0, size, BATCH):
                count = min(BATCH, size - start)
                block = rng.normal(size=(count, DIMENSION)).astype(np.float32)
                picks = rng.choice(len(words), size=(count, 80), p=probabilities)
                store.put_vectors(
                    [
                        {
                            "key": f"c{start + i}",
                            "data": {"float32": block[i]},
                            "text": " ".join(words[picks[i]]),
                            "metadata": {"n": start + i},
                        }
                        for i in range(count)
                    ]
                )
            # Queries: 2-5 mid-frequency words, as people type them; random vectors.
            middle = words[np.argsort(-probabilities)[50:5000]]
            queries = [" ".join(rng.choice(middle, size=rng.integers(2, 6))) for _ in range(300)]
            vectors = rng.normal(size=(len(queries), DIMENSION))
    vectors = np.asarray(vectors, dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    Path(path).with_suffix(".json").write_text(
        json.dumps({"queries": queries, "vectors": vectors.tolist()})
    )
    return {"chunks": size, "file_mb": Path(path).stat().st_size / 1e6}


def reader(path: str, repeat: int) -> dict[str, Any]:
    """A fresh reader: ``warm_up()``, its RSS, and the p50/p95 of every path."""
    import duckdb

    from duckdb_vectors import VectorStore

    saved = json.loads(Path(path).with_suffix(".json").read_text())
    texts, vectors = saved["queries"], np.asarray(saved["vectors"], dtype=np.float32)
    text = lambda i: texts[i % len(texts)]  # noqa: E731
    vector = lambda i: vectors[i % len(vectors)]  # noqa: E731
    result: dict[str, Any] = {"rss_before_mb": rss_mb()}
    store = VectorStore(path, model_path=MODEL, read_only=True)
    _, result["warm_up_ms"] = timed(store.warm_up)
    result["rss_after_warm_up_mb"] = rss_mb()
    result["memory_vector"] = latencies(lambda i: store.query_vectors(vector(i), TOP_K), repeat)
    result["memory_hybrid"] = latencies(
        lambda i: store.query(text(i), TOP_K, vector=vector(i)), repeat
    )
    store.close()

    few = max(5, repeat // 5)
    sql = VectorStore(path, model_path=MODEL, read_only=True, memory_index=False)
    result["sql_vector"] = latencies(lambda i: sql.query_vectors(vector(i), TOP_K), few)
    result["sql_hybrid"] = latencies(lambda i: sql.query(text(i), TOP_K, vector=vector(i)), few)
    sql.close()

    with duckdb.connect(path, read_only=True) as raw:
        statement = (
            f"SELECT chunk_id FROM chunks ORDER BY array_cosine_distance(embedding,"
            f" $1::FLOAT[{DIMENSION}]) LIMIT {TOP_K}"
        )
        result["duckdb_scan"] = latencies(
            lambda i: raw.execute(statement, [vector(i).tolist()]).fetchall(), few
        )
        matrix = np.stack(raw.execute("SELECT embedding FROM chunks").fetchnumpy()["embedding"])
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)

    def numpy_top(i: int) -> np.ndarray:
        scores = matrix @ vector(i)
        top = np.argpartition(-scores, TOP_K)[:TOP_K]
        return top[np.argsort(-scores[top])]

    result["numpy"] = latencies(numpy_top, repeat)
    return result


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {
        "warm_up_s": median(r["warm_up_ms"] for r in runs) / 1000,
        "rss_after_warm_up_mb": median(r["rss_after_warm_up_mb"] for r in runs),
    }
    for name in PATHS:
        merged[name] = {q: median(r[name][q] for r in runs) for q in ("p50_ms", "p95_ms")}
    for name in PATHS[1:]:
        merged[name]["x_numpy"] = merged[name]["p50_ms"] / merged["numpy"]["p50_ms"]
    return merged


def table(results: dict[str, dict[str, Any]]) -> str:
    columns = [(size, tree) for size, trees in results.items() for tree in trees]
    lines = [
        "| path | " + " | ".join(f"{size:,} chunks, {tree}" for size, tree in columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    cell = lambda size, tree: results[size][tree]["medians"]  # noqa: E731
    for name in PATHS:
        cells = []
        for size, tree in columns:
            entry = cell(size, tree)[name]
            ratio = f" ({entry['x_numpy']:.2f}x)" if "x_numpy" in entry else ""
            cells.append(f"{entry['p50_ms']:.3f} / {entry['p95_ms']:.3f}{ratio}")
        lines.append(f"| {name} p50 / p95 ms | " + " | ".join(cells) + " |")
    lines.append(
        "| warm_up() s | " + " | ".join(f"{cell(s, t)['warm_up_s']:.2f}" for s, t in columns) + " |"
    )
    lines.append(
        "| RSS after warm_up() MB | "
        + " | ".join(f"{cell(s, t)['rss_after_warm_up_mb']:.0f}" for s, t in columns)
        + " |"
    )
    lines.append(
        "| file MB | "
        + " | ".join(f"{results[s][t]['build']['file_mb']:.0f}" for s, t in columns)
        + " |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5k and 100k only")
    parser.add_argument("--sizes", type=int, nargs="*", help="chunk counts (5000 = SciFact)")
    parser.add_argument("--repeat", type=int, default=200, help="timed queries of each path")
    parser.add_argument(
        "--rounds", type=int, help="reader processes per checkout (1; 3 with a baseline)"
    )
    parser.add_argument("--baseline", type=Path, help="another checkout, with its .venv")
    parser.add_argument("--out", type=Path, default=OUT / "query_latency.json")
    arguments = parser.parse_args()
    sizes = arguments.sizes or ([5000, 100_000] if arguments.quick else [5000, 100_000, 1_000_000])
    trees = {"this": Path(sys.executable)}
    if arguments.baseline:
        trees["baseline"] = tree_python(arguments.baseline)
    rounds = arguments.rounds or (3 if arguments.baseline else 1)
    results: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="query-latency-") as scratch:
        for size in sizes:
            repeat = arguments.repeat if size <= 100_000 else max(20, arguments.repeat // 5)
            results[size] = {}
            readers = {}
            for tree, python in trees.items():
                path = str(Path(scratch) / f"{tree}-{size}.duckdb")
                print(f"building {size:,} chunks ({tree})", flush=True)
                built = run_function(build, path, size, python=python)
                results[size][tree] = {"build": built.result | {"seconds": built.seconds}}
                readers[tree] = lambda path=path, python=python, repeat=repeat: run_function(
                    reader, path, repeat, python=python
                )
            runs = alternate(readers, rounds, log=print)
            for tree, done in runs.items():
                results[size][tree]["runs"] = [run.result for run in done]
                results[size][tree]["medians"] = medians([run.result for run in done])
                results[size][tree]["reader_peak_rss_mb"] = median(r.peak_rss_mb for r in done)
    write_json(arguments.out, {**machine(), "rounds": rounds, "results": results})
    print(table(results))


if __name__ == "__main__":
    main()
