"""``index --from-parquet`` against ``put_vectors`` of the same rows: time and peak RSS.

Writes ROWS rows (random unit float32 vectors of DIMENSION, ~40-word texts from a fixed
vocabulary) to one Parquet file with DuckDB's COPY, then, each in a fresh process, imports it
into a new index with ``duckdb-vectors index --from-parquet`` and with ``put_vectors`` (the
rows read into Python items first, as an SDK caller holding them in memory would).

    python bench/parquet_import.py --rows 100000

Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

DIMENSION = 256
BACKEND = f"hashing:{DIMENSION}"

PUT_VECTORS = """
import sys, duckdb
from duckdb_vectors.store import VectorStore
rows = duckdb.sql(f"SELECT chunk_id, text, source, embedding FROM read_parquet('{sys.argv[1]}')")
items = [
    {"key": key, "text": text, "source": source, "data": {"float32": vector}}
    for key, text, source, vector in rows.fetchall()
]
with VectorStore(sys.argv[2], sys.argv[3], read_only=False) as store:
    store.put_vectors(items)
"""


def write_rows(path: Path, rows: int) -> None:
    with duckdb.connect() as connection:
        connection.execute("SELECT setseed(0.17)")
        connection.execute(
            f"""COPY (
                SELECT 'row-' || i AS chunk_id,
                       'doc-' || (i // 20) || '.md' AS source,
                       array_to_string(list_transform(range(40),
                           lambda w: 'word' || (random() * 5000)::INT), ' ') AS text,
                       list_transform(range({DIMENSION}), lambda d: (random() - 0.5)::FLOAT)
                           AS embedding
                FROM range({rows}) t(i)
            ) TO '{path}' (FORMAT parquet)"""
        )


# Runs its arguments and prints their peak RSS: each measurement gets a fresh parent, since a
# process's RUSAGE_CHILDREN is the maximum over every child it ever waited for.
PEAK_OF = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def measured(command: list[str]) -> tuple[float, float]:
    """Seconds and the command's peak RSS in MB."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", PEAK_OF, *command], check=True, capture_output=True, text=True
    )
    return time.monotonic() - started, int(done.stdout) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        parquet = Path(folder) / "rows.parquet"
        write_rows(parquet, arguments.rows)
        cli = [str(Path(sys.executable).with_name("duckdb-vectors")), "index"]
        results = {
            "put_vectors": measured(
                [sys.executable, "-c", PUT_VECTORS, str(parquet), f"{folder}/b.duckdb", BACKEND]
            ),
        }
        results["index --from-parquet"] = measured(
            [
                *cli,
                "--from-parquet",
                str(parquet),
                "--db",
                f"{folder}/a.duckdb",
                "--backend",
                BACKEND,
            ]
        )
    print(f"{arguments.rows:,} rows, {DIMENSION}-dim float32, ~40-word texts\n")
    print("| write | seconds | peak RSS (MB) |\n|---|---:|---:|")
    for name, (seconds, peak) in results.items():
        print(f"| {name} | {seconds:.1f} | {peak:.0f} |")


if __name__ == "__main__":
    main()
