"""int8 vectors with exact rescoring against float32 brute force: recall, latency, memory.

Two vector sets, each at every size: real embeddings (texts made of sentences from the
DuckDB docs, SciFact and XQuAD, embedded with the static model; real questions as queries)
and random-normal unit vectors (the hard case: no clusters, near-equal neighbour scores).
For each query, side by side in one process:

- float32: ``matrix @ q`` and ``argpartition``, the in-memory index's vector ranking;
- int8: ``Int8Vectors.top`` with the exact vectors of the candidates read from the float32
  matrix (the ranking's own cost), with the fastest kernel installed and with numpy's;
- int8 + DuckDB: the same, the candidates' vectors read from a DuckDB table of the float32
  embeddings by key, as an index stores them (the cost the store would pay).

    python bench/quantization.py                      # 100k and 1M, 200 queries
    python bench/quantization.py --sizes 100000 --queries 50
    python bench/quantization.py --blas-threads 1     # sgemv on one thread, as int8 runs

Prints Markdown tables; writes bench/out/quantization.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import re
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
from common import DOCS, MODEL, OUT, QUERIES, SHARED, write_json
from threadpoolctl import threadpool_limits

from duckdb_vectors import get_embedder
from duckdb_vectors.search.quantization import RESCORE_FACTOR, Int8Vectors

BACKEND = "fastembed:minishlab/potion-multilingual-128M"
IR = SHARED / "evaldata" / "ir"
DEPTHS = (10, 100)  # a vector-only top-10, and the candidates a hybrid search fuses
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
EMBED_BATCH = 100_000

Ranker = Callable[[np.ndarray, int], np.ndarray]


def sentences() -> list[list[str]]:
    """Prose sentences (as word lists) of the DuckDB docs, SciFact and XQuAD (English)."""
    paragraphs = []
    for path in sorted(DOCS.rglob("*.md")):
        text = re.sub(r"```.*?```", " ", path.read_text(encoding="utf-8"), flags=re.S)
        paragraphs += [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    for name in ("scifact", "xquad-r-paragraphs/en"):
        with gzip.open(IR / name / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
            paragraphs += [json.loads(line)["text"] for line in handle]
    prose = [p for p in paragraphs if not p.startswith(("---", "{%", "|", "#"))]
    return [s.split() for p in prose for s in SENTENCE_END.split(p) if len(s.split()) >= 4]


def texts(count: int, seed: int = 0) -> list[str]:
    """``count`` distinct texts of ~25 words: a sentence, then a few words of another."""
    pool = sentences()
    rng = np.random.default_rng(seed)
    made: dict[str, None] = {}
    while len(made) < count:
        pairs = rng.integers(0, len(pool), size=(count - len(made), 2)).tolist()
        made.update(dict.fromkeys(" ".join(pool[a][:24] + pool[b][:6]) for a, b in pairs))
    return list(made)


def question_texts(count: int, seed: int = 1) -> list[str]:
    """Real questions: SciFact claims, XQuAD questions and the DuckDB docs queries."""
    lines = [json.loads(line)["text"] for line in (IR / "scifact" / "queries.jsonl").open()]
    lines += [
        json.loads(line)["text"]
        for line in (IR / "xquad-r-paragraphs" / "en" / "queries.jsonl").open()
    ]
    picked = np.random.default_rng(seed).choice(len(lines), size=count, replace=False)
    return QUERIES + [lines[i] for i in picked[: count - len(QUERIES)]]


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def real_vectors(size: int, query_count: int) -> tuple[np.ndarray, np.ndarray]:
    embedder = get_embedder(BACKEND, model_path=MODEL)
    all_texts = texts(size)
    matrix = np.empty((size, embedder.dimension), dtype=np.float32)
    started = time.perf_counter()
    for start in range(0, size, EMBED_BATCH):
        matrix[start : start + EMBED_BATCH] = embedder.embed(all_texts[start : start + EMBED_BATCH])
        done = min(size, start + EMBED_BATCH)
        print(f"  embedded {done:,}/{size:,} ({time.perf_counter() - started:.0f} s)", flush=True)
    del all_texts
    return unit_rows(matrix), unit_rows(embedder.embed_query(question_texts(query_count)))


def random_vectors(size: int, query_count: int, dimension: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((size, dimension), dtype=np.float32)
    return unit_rows(matrix), unit_rows(rng.standard_normal((query_count, dimension), np.float32))


class DuckDBVectors:
    """The float32 embeddings in a DuckDB file, keyed and ordered by row, as an index keeps
    them; ``__call__`` reads the rows a rescore asks for."""

    def __init__(self, directory: Path, matrix: np.ndarray) -> None:
        self.dimension = matrix.shape[1]
        self.connection = duckdb.connect(str(directory / "vectors.duckdb"))
        self.connection.execute("SET memory_limit = '2GB'")
        self.connection.execute(
            f"CREATE TABLE chunks (key BIGINT NOT NULL, embedding FLOAT[{self.dimension}])"
        )
        for start in range(0, len(matrix), EMBED_BATCH):
            block = matrix[start : start + EMBED_BATCH]
            batch = pa.table(
                {
                    "key": np.arange(start, start + len(block)),
                    "embedding": pa.FixedSizeListArray.from_arrays(
                        pa.array(block.ravel()), self.dimension
                    ),
                }
            )
            self.connection.register("batch", batch)
            self.connection.execute("INSERT INTO chunks SELECT * FROM batch")
            self.connection.unregister("batch")

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        found = self.connection.execute(
            "SELECT key, embedding FROM chunks WHERE key IN (SELECT unnest($1::BIGINT[]))",
            [rows.tolist()],
        ).fetchnumpy()
        by_key = dict(zip(found["key"].tolist(), found["embedding"], strict=True))
        return np.stack([by_key[row] for row in rows.tolist()]).astype(np.float32)

    def close(self) -> None:
        self.connection.close()


def best(scores: np.ndarray, k: int) -> np.ndarray:
    """The rows of the ``k`` highest scores, best first."""
    rows = np.argpartition(scores, len(scores) - k)[len(scores) - k :]
    return rows[np.argsort(-scores[rows])]


def float32_top(matrix: np.ndarray) -> Ranker:
    return lambda query, k: best(matrix @ query, k)


def int8_top(vectors: Int8Vectors, exact: Callable[[np.ndarray], np.ndarray]) -> Ranker:
    return lambda query, k: vectors.top(query, k, exact)[0]


def recall(matrix: np.ndarray, queries: np.ndarray, found: list[np.ndarray], k: int) -> float:
    """Share of the exact top-k found; a row that ties the k-th exact score counts as found."""
    hits = 0
    for query, rows in zip(queries, found, strict=True):
        scores = matrix @ query
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        hits += int(np.sum(scores[rows[:k]] >= kth - 1e-6))
    return hits / (k * len(queries))


def latencies(rankers: dict[str, Ranker], queries: np.ndarray, k: int) -> dict[str, dict]:
    """p50/p95 ms of each ranker, the rankers taking turns query by query.

    The turn order is shuffled for every query: BLAS threads keep spinning for a while after
    a product, which on two cores slows whichever ranker runs next (in a fixed or rotated
    order, always the same one).
    """
    for ranker in rankers.values():
        ranker(queries[0], k)  # warm up
    names = list(rankers)
    samples: dict[str, list[float]] = {name: [] for name in names}
    shuffler = np.random.default_rng(k)
    for query in queries:
        for name in shuffler.permutation(names).tolist():
            started = time.perf_counter()
            rankers[name](query, k)
            samples[name].append((time.perf_counter() - started) * 1000)
    return {
        name: {"p50_ms": float(np.median(times)), "p95_ms": float(np.percentile(times, 95))}
        for name, times in samples.items()
    }


def scoring_peak_bytes(vectors: Int8Vectors, query: np.ndarray) -> int:
    """Peak bytes numpy allocates while scoring one query (the scores included)."""
    tracemalloc.start()
    vectors.scores(query)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def measure(matrix: np.ndarray, queries: np.ndarray, directory: Path) -> dict:
    started = time.perf_counter()
    vectors = Int8Vectors.quantize(matrix)
    quantize_s = time.perf_counter() - started
    stored = DuckDBVectors(directory, matrix)
    in_memory = lambda rows: matrix[rows]  # noqa: E731
    rankers = {
        "float32": float32_top(matrix),
        f"int8 ({vectors.kernel_name})": int8_top(vectors, in_memory),
        "int8 (numpy)": int8_top(Int8Vectors(vectors.codes, "numpy"), in_memory),
        "int8 + DuckDB": int8_top(vectors, stored),
    }
    result: dict = {
        "rows": len(matrix),
        "kernel": vectors.kernel_name,
        "rescore_factor": RESCORE_FACTOR,
        "quantize_s": quantize_s,
        "float32_bytes": matrix.nbytes,
        "int8_bytes": vectors.nbytes,
        "scoring_peak_bytes": scoring_peak_bytes(vectors, queries[0]),
    }
    for k in DEPTHS:
        found = [vectors.top(query, k, in_memory)[0] for query in queries]
        approximate = [best(vectors.scores(query), k) for query in queries]
        result[f"recall@{k}"] = recall(matrix, queries, found, k)
        result[f"recall@{k}_without_rescoring"] = recall(matrix, queries, approximate, k)
        result[f"latency@{k}"] = latencies(rankers, queries, k)
    stored.close()
    return result


def vector_sets(sizes: list[int], query_count: int) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """Each set at its largest size; smaller sizes are its first rows."""
    print(f"embedding {max(sizes):,} texts with {MODEL.name}", flush=True)
    matrix, query_vectors = real_vectors(max(sizes), query_count)
    yield "real (static model)", matrix, query_vectors
    dimension = matrix.shape[1]
    del matrix
    yield "random normal", *random_vectors(max(sizes), query_count, dimension)


def table(runs: list[dict]) -> str:
    names = list(runs[0]["latency@10"])
    lines = [
        "| vectors | rows | k | recall@k (no rescoring) | "
        + " | ".join(f"{name} p50 / p95 ms" for name in names)
        + " | float32 / int8 MB |",
        "|---|---:|---:|---:|" + "---:|" * (len(names) + 1),
    ]
    for run in runs:
        for k in DEPTHS:
            times = run[f"latency@{k}"]
            base = times["float32"]["p50_ms"]
            cells = [
                f"{entry['p50_ms']:.1f} / {entry['p95_ms']:.1f}"
                + (f" ({entry['p50_ms'] / base:.2f}x)" if name != "float32" else "")
                for name, entry in times.items()
            ]
            lines.append(
                f"| {run['set']} | {run['rows']:,} | {k} | {run[f'recall@{k}']:.4f} "
                f"({run[f'recall@{k}_without_rescoring']:.4f}) | {' | '.join(cells)} | "
                f"{run['float32_bytes'] / 1e6:.0f} / {run['int8_bytes'] / 1e6:.0f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--blas-threads", type=int, help="limit numpy's BLAS to this many")
    arguments = parser.parse_args()
    with threadpool_limits(arguments.blas_threads, user_api="blas"):
        run_all(sorted(arguments.sizes), arguments.queries, arguments.blas_threads)


def run_all(sizes: list[int], query_count: int, blas_threads: int | None) -> None:
    runs = []
    for name, matrix, query_vectors in vector_sets(sizes, query_count):
        for size in sizes:
            print(f"measuring {name} at {size:,} rows", flush=True)
            with tempfile.TemporaryDirectory() as directory:
                run = measure(matrix[:size], query_vectors, Path(directory))
            runs.append({"set": name, **run})
            print(
                f"  int8 kernel {run['kernel']}, quantized in {run['quantize_s']:.1f} s, "
                f"scoring peak {run['scoring_peak_bytes'] / 1e6:.1f} MB",
                flush=True,
            )
    write_json(
        OUT / "quantization.json",
        {
            "machine": platform.machine(),
            "queries": query_count,
            "blas_threads": blas_threads or "default",
            "runs": runs,
        },
    )
    print(table(runs))


if __name__ == "__main__":
    main()
