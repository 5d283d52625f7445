"""Could int8 codes make a vector query at 5k chunks cheaper than numpy's exact scan (issue 29,
item 3)? An exact pre-filter, timed against numpy on SciFact, in one process, alternating blocks.

- numpy: ``matrix @ q``, ``argpartition`` and a sort of the ten: the reference of
  ``bench/query_overhead.py``, which builds no hits.
- pre-filter: the query's int8 codes scored against every row's with the fastest kernel
  installed (``Int8Vectors``, numkong when present); each row's approximate cosine is within
  ``|x - u_x| + |q - u_q|`` of the exact one (``u``: the direction of the codes), so only the
  rows whose upper bound reaches the tenth best lower bound are rescored with their float32
  vectors. The result is the exact top ten, checked on every query.

    python bench/int8_prefilter.py
    python bench/int8_prefilter.py --rounds 40

Nothing of this is in the library: it was slower than numpy here (RESULTS.md).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import peers

from duckdb_vectors.index.vector_codes import int8_codes
from duckdb_vectors.search.quantization import KERNELS, Int8Vectors

TOP_K = 10
BLOCK = 100  # queries in a row per ranker before the other takes over


def exact_top(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    scores = matrix @ query
    top = np.argpartition(-scores, TOP_K - 1)[:TOP_K]
    return top[np.argsort(-scores[top])]


class Prefilter:
    """int8 scores, a proven error bound per row, then exact scores of the rows left."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix = matrix
        self.int8 = Int8Vectors.quantize(matrix)
        self.dots = KERNELS[self.int8.kernel_name]
        self.row_errors = _direction_errors(matrix, self.int8.codes)
        self.rescored: list[int] = []

    def top(self, query: np.ndarray) -> np.ndarray:
        codes = int8_codes(query[None])
        approximate = np.empty(len(self.matrix), dtype=np.float32)
        self.dots(self.int8.codes, codes[0], approximate)
        approximate *= self.int8.inverse_norms
        approximate /= np.linalg.norm(codes.astype(np.float32))
        query_error = float(_direction_errors(query[None], codes)[0])
        lower = approximate - self.row_errors
        floor = np.partition(lower, len(lower) - TOP_K)[len(lower) - TOP_K] - query_error
        candidates = np.flatnonzero(approximate + self.row_errors + query_error >= floor)
        self.rescored.append(len(candidates))
        return candidates[exact_top(self.matrix[candidates], query)]


def _direction_errors(vectors: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``|x - u|`` per row, in float64, rounded up so float32 scores stay inside the bound."""
    directions = codes.astype(np.float64)
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    errors = np.linalg.norm(vectors.astype(np.float64) - directions, axis=1)
    return (errors * (1 + 1e-4) + 1e-6).astype(np.float32)


def p50_microseconds(rank: Callable[[np.ndarray], np.ndarray], queries: np.ndarray) -> float:
    times = []
    for query in queries:
        started = time.perf_counter()
        rank(query)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="blocks of 100 per ranker")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="int8-prefilter-") as folder:
        peers.prepare("scifact", Path(folder))
        data = peers.Data(Path(folder))
    matrix = np.ascontiguousarray(data.vectors, dtype=np.float32)
    queries = np.ascontiguousarray(data.query_vectors, dtype=np.float32)
    prefilter = Prefilter(matrix)
    for query in queries:
        if set(exact_top(matrix, query)) != set(prefilter.top(query)):
            raise SystemExit("the pre-filter missed an exact top-10 row")
    rescored = np.array(prefilter.rescored)
    print(
        f"exact on all {len(queries):,} queries; rows rescored: median "
        f"{np.median(rescored):.0f}, p90 {np.percentile(rescored, 90):.0f}, max {rescored.max()}"
        f" (kernel {prefilter.int8.kernel_name})"
    )
    p50s: dict[str, list[float]] = {"numpy": [], "pre-filter": []}
    rankers = {"numpy": lambda query: exact_top(matrix, query), "pre-filter": prefilter.top}
    for round_ in range(args.rounds):
        block = queries[(round_ * BLOCK) % len(queries) :][:BLOCK]
        for name, rank in rankers.items():
            p50s[name].append(p50_microseconds(rank, block))
    numpy_p50, prefilter_p50 = (statistics.median(p50s[name]) for name in rankers)
    print(
        f"p50 numpy {numpy_p50:.0f} us, pre-filter {prefilter_p50:.0f} us: "
        f"{prefilter_p50 / numpy_p50:.2f}x (medians of {args.rounds} blocks of {BLOCK})"
    )


if __name__ == "__main__":
    main()
