"""Building a query's ten chunks from the rows a snapshot holds, each set right after a matrix
product as in a vector query (which streams the vectors through the caches first), in fresh
processes, this checkout and ``--baseline`` alternating (issue 29, item 3).

    python bench/chunk_building.py INDEX.duckdb --baseline /tmp/main-tree --rounds 9

The index must fit the in-memory snapshot with its rows held (up to
``memory_index.RESIDENT_ROWS_LIMIT`` chunks). Set ``DUCKDB_VECTORS_MODEL_PATH`` to a local
copy of its model. Each process builds the same 3,000 sets of ten random rows; the script
prints each round's median per set and the paired differences. The two trees take turns
going first: a process that runs right after another has freed its memory runs faster.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from warm_up_floor import checked_paths, timed

WORKER = """
import os, statistics, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as bench/query_overhead.py's workers
import numpy as np
from duckdb_vectors import VectorStore
store = VectorStore(sys.argv[1], read_only=True)
store.warm_up()
searcher = store._searcher()
matrix, keys = searcher.vectors.matrix, searcher.keys
random = np.random.default_rng(1)
sets = [np.sort(random.choice(keys, 10, replace=False)) for _ in range(int(sys.argv[2]))]
queries = random.standard_normal((64, matrix.shape[1])).astype(np.float32)
searcher.chunks(sets[0])
spent = []
for i, chosen in enumerate(sets):
    matrix @ queries[i % len(queries)]
    started = time.perf_counter_ns()
    searcher.chunks(chosen)
    spent.append(time.perf_counter_ns() - started)
print(statistics.median(spent) / 1000)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", help="an index file (opened read-only)")
    parser.add_argument("--baseline", help="another checkout's source tree")
    parser.add_argument("--rounds", type=int, default=9, help="alternating rounds")
    parser.add_argument("--sets", type=int, default=3000, help="sets of ten rows a process")
    arguments = parser.parse_args()
    checked_paths(parser, arguments)
    # This checkout first on PYTHONPATH too, not imported through its install: two runs of one
    # tree, one each way, differed by 1 us.
    trees = {"this": str(Path(__file__).resolve().parents[1])}
    if arguments.baseline:
        trees["baseline"] = arguments.baseline
    micros: dict[str, list[float]] = {name: [] for name in trees}
    for round_number in range(arguments.rounds):
        order = list(trees.items())
        if round_number % 2:  # ABBA: neither tree always runs right after the other
            order.reverse()
        for name, source in order:
            micros[name].append(timed(WORKER, arguments.index, str(arguments.sets), source=source))
    for name, runs in micros.items():
        print(
            f"{name}: median {statistics.median(runs):.1f} us for ten chunks"
            f" ({', '.join(f'{run:.1f}' for run in runs)})"
        )
    if arguments.baseline:
        differences = [a - b for a, b in zip(micros["this"], micros["baseline"], strict=True)]
        print(
            f"this - baseline, per round: median {statistics.median(differences):+.1f} us"
            f" ({', '.join(f'{d:+.1f}' for d in differences)}; load {os.getloadavg()[0]:.1f})"
        )


if __name__ == "__main__":
    main()
