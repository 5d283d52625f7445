"""``warm_up()`` of an index against DuckDB's own read of its vector column into one matrix
(issue 29, item 4: within 1.5x), each in a fresh process, rounds alternating.

    python bench/warm_up_floor.py INDEX.duckdb --repeat 4
    python bench/warm_up_floor.py INDEX.duckdb --floor-first   # the other order
    NUMPY_MADVISE_HUGEPAGE=0 python bench/warm_up_floor.py INDEX.duckdb
    python bench/warm_up_floor.py INDEX.duckdb --baseline /tmp/main-tree  # and main's warm_up
    python bench/warm_up_floor.py NEW.duckdb --baseline /tmp/main-tree --baseline-index OLD.duckdb
    python bench/warm_up_floor.py INDEX.duckdb --prime 3     # 3 GB written before each process

On this machine the first write to a fresh gigabyte takes from 0.1 s to several seconds, varying
from one process to the next, and a process that runs right after a big one has freed its memory
is spared most of it: run both orders, or ``--prime GB`` (that much memory written by a process
of its own before each timed one; 9 rounds or more). numpy's huge pages (it asks for them for
every array of 4 MB or more) slow both here, the kernel taking longer to hand out fresh memory;
it does not compact memory for them (the script prints the huge-page faults and compaction
stalls of its runs, from ``/proc/vmstat``; RESULTS.md). Set ``DUCKDB_VECTORS_MODEL_PATH`` to a
local copy of the index's model. ``--baseline`` is another checkout's source tree: its
``warm_up()`` runs in each round too, with that tree first on ``PYTHONPATH``, on
``--baseline-index`` if given (a copy of the index at the schema that tree reads: a newer schema
is refused, an older one may be read more slowly).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

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


VMSTAT_COUNTERS = ("thp_fault_alloc", "thp_fault_fallback", "compact_stall")

PRIME = """
import sys
import numpy as np
np.ones(int(float(sys.argv[1]) * (1 << 30)) // 8)
"""


def timed(code: str, *arguments: str, source: str | None = None) -> float:
    """The number ``code`` prints last, run with ``arguments`` in a fresh process (with the
    checkout ``source`` first on ``PYTHONPATH``, if given)."""
    environment = os.environ | ({"PYTHONPATH": source} if source else {})
    done = subprocess.run(
        [sys.executable, "-c", code, *arguments],
        capture_output=True,
        text=True,
        check=False,
        env=environment,
    )
    if done.returncode:  # the timed process's own error, its traceback's last line
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        sys.exit(f"a timed process failed: {lines[-1]}")
    return float(done.stdout.split()[-1])


def checked_paths(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> None:
    """One line, before any process runs, for an index or a baseline that is not there."""
    for index in (arguments.index, arguments.baseline_index):
        if index and not Path(index).is_file():
            parser.error(f"{index}: no such index file")
    if arguments.baseline and not (Path(arguments.baseline) / "duckdb_vectors").is_dir():
        parser.error(f"--baseline {arguments.baseline}: no duckdb_vectors package in it")


def vmstat() -> dict[str, int]:
    """The kernel's counters of huge-page faults and compaction (empty off Linux)."""
    path = Path("/proc/vmstat")
    if not path.exists():
        return {}
    counters = dict(line.split() for line in path.read_text().splitlines())
    return {name: int(counters.get(name, 0)) for name in VMSTAT_COUNTERS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", help="an index file (opened read-only)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating rounds")
    parser.add_argument("--floor-first", action="store_true", help="the floor first each round")
    parser.add_argument("--baseline", help="another checkout's source tree: its warm_up too")
    parser.add_argument("--baseline-index", help="the index the baseline opens (default: INDEX)")
    parser.add_argument("--prime", type=float, help="GB to write before each timed process")
    arguments = parser.parse_args()
    checked_paths(parser, arguments)
    index = arguments.index
    order = [("floor", FLOOR, None, index), ("warm_up", WARM_UP, None, index)]
    if arguments.baseline:
        baseline_index = arguments.baseline_index or index
        order.insert(1, ("baseline warm_up", WARM_UP, arguments.baseline, baseline_index))
    if not arguments.floor_first:
        order.reverse()
    seconds: dict[str, list[float]] = {name: [] for name, *_ in order}
    counters_before = vmstat()
    for _ in range(arguments.repeat):
        for name, code, source, opened in order:
            if arguments.prime:
                subprocess.run([sys.executable, "-c", PRIME, str(arguments.prime)], check=True)
            seconds[name].append(timed(code, opened, source=source))
    counters = {name: count - counters_before[name] for name, count in vmstat().items()}
    for name, runs in seconds.items():
        print(f"{name}: {', '.join(f'{run:.2f}' for run in runs)} s")
    if counters:
        print("kernel, over all runs: " + ", ".join(f"{n} +{c}" for n, c in counters.items()))
    floor = statistics.median(seconds["floor"])
    if arguments.baseline:
        baseline = statistics.median(seconds["baseline warm_up"])
        print(f"median baseline warm_up {baseline:.2f} s: {baseline / floor:.2f}x the floor")
    warm_up = statistics.median(seconds["warm_up"])
    print(
        f"median warm_up {warm_up:.2f} s, floor {floor:.2f} s: {warm_up / floor:.2f}x"
        f" (NUMPY_MADVISE_HUGEPAGE={os.environ.get('NUMPY_MADVISE_HUGEPAGE', 'unset')},"
        f" prime {arguments.prime or 0} GB, load {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
