"""Small writes to a big index: one chunk at a time, as an agent's registry of skills is
appended at start. Each write costs what it writes plus a fixed part (the manifest's content
hash, the postings' order check), which this measures.

    python bench/small_writes.py --db /path/to/1m.duckdb --appends 7

The index is copied first (the copy is written to and removed after), so it stays as it was.
Prints the median seconds of an append, after one untimed append (the first write of a
process also opens and migrates the file). Compare code versions by running the script from
each checkout, alternating.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from common import MODEL

from duckdb_vectors import VectorStore


def median_append_seconds(db: Path, appends: int) -> float:
    rng = np.random.default_rng(0)
    with VectorStore(db, read_only=False, model_path=MODEL) as store:
        dimension = store.manifest.dimension if store.manifest else 256
        seconds = []
        for number in range(appends + 1):
            vector = {
                "key": f"small-write-{number}",
                "data": rng.standard_normal(dimension).astype(np.float32).tolist(),
                "metadata": {"text": f"skill {number}: how to file an expense report"},
            }
            started = time.perf_counter()
            store.put_vectors([vector])
            seconds.append(time.perf_counter() - started)
    return statistics.median(seconds[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True, help="the index to copy and append to")
    parser.add_argument("--appends", type=int, default=7)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="small-writes-") as scratch:
        copy = Path(scratch) / arguments.db.name
        shutil.copyfile(arguments.db, copy)
        median = median_append_seconds(copy, arguments.appends)
    print(f"{arguments.db.name}: one-chunk append, median of {arguments.appends}: {median:.3f} s")


if __name__ == "__main__":
    main()
