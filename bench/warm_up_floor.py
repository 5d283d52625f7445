"""``warm_up()`` of an index against DuckDB's own read of its vector column into one matrix
(issue 29, item 4: within 1.5x), each in a fresh process, rounds alternating.

    python bench/warm_up_floor.py INDEX.duckdb --repeat 4
    python bench/warm_up_floor.py INDEX.duckdb --floor-first   # the other order
    NUMPY_MADVISE_HUGEPAGE=0 python bench/warm_up_floor.py INDEX.duckdb

The first touch of freshly mapped memory can cost this machine seconds per gigabyte (numpy
asks for huge pages, and the kernel compacts memory to give them: docs/performance.md), and a
process that runs right after a big one has freed its memory is spared most of it: run both
orders. Set ``DUCKDB_VECTORS_MODEL_PATH`` to a local copy of the index's model.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

WARM_UP = """
import sys, time
from duckdb_vectors import VectorStore
store = VectorStore(sys.argv[1], read_only=True)
started = time.perf_counter()
store.warm_up()
print(time.perf_counter() - started)
"""

# What ``memory_index._normalised_matrix`` reads, without the snapshot around it.
FLOOR = """
import sys, time
import duckdb, numpy as np
from duckdb_vectors.index.db import SCAN_MEMORY_LIMIT, numpy_batches
started = time.perf_counter()
connection = duckdb.connect(sys.argv[1], read_only=True)
connection.execute(f"SET memory_limit = '{SCAN_MEMORY_LIMIT}B'")
connection.execute("SET enable_progress_bar = false")  # as the library's connections do
rows = connection.execute("SELECT count(*) FROM chunks").fetchall()[0][0]
width = connection.execute("SELECT array_length(embedding) FROM chunks LIMIT 1").fetchall()[0][0]
matrix = np.empty((rows, width), dtype=np.float32)
start = 0
for batch in numpy_batches(connection.sql("SELECT embedding FROM chunks")):
    matrix[start : start + len(batch["embedding"])] = batch["embedding"]
    start += len(batch["embedding"])
print(time.perf_counter() - started)
"""


def timed(code: str, index: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", code, index], capture_output=True, text=True, check=False
    )
    if done.returncode:
        sys.exit(done.stderr[-2000:])
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", help="an index file (opened read-only)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating rounds")
    parser.add_argument("--floor-first", action="store_true", help="the floor first each round")
    arguments = parser.parse_args()
    order = [("floor", FLOOR), ("warm_up", WARM_UP)]
    if not arguments.floor_first:
        order.reverse()
    seconds: dict[str, list[float]] = {name: [] for name, _ in order}
    for _ in range(arguments.repeat):
        for name, code in order:
            seconds[name].append(timed(code, arguments.index))
    for name, runs in seconds.items():
        print(f"{name}: {', '.join(f'{run:.2f}' for run in runs)} s")
    warm_up, floor = (statistics.median(seconds[name]) for name in ("warm_up", "floor"))
    print(
        f"median warm_up {warm_up:.2f} s, floor {floor:.2f} s: {warm_up / floor:.2f}x"
        f" (NUMPY_MADVISE_HUGEPAGE={os.environ.get('NUMPY_MADVISE_HUGEPAGE', 'unset')},"
        f" load {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
