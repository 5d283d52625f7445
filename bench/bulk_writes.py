"""Bulk writes of precomputed vectors side by side: ``put_vectors`` and ``index --from-parquet``
against sqlite-vec + FTS5 and LanceDB (+ FTS index) bulk inserts of the same rows, and, with
``--baseline``, the same two writes by another checkout of duckdb-vectors (say, main).

Every write runs in a fresh process (``scale.py``'s workers, ``peers.py``'s adapters); rounds
alternate the writers, so a shared machine's load falls on all of them alike, and medians are
reported with each writer's ratio to the fastest peer of the same run.

    python bench/bulk_writes.py --parquet /tmp/bulk-data/100k.parquet --repeat 3 \\
        --peers-python /tmp/scale-peers-venv/bin/python --baseline /tmp/bulk-before

``--baseline`` is a source tree with its own ``.venv`` (``make install`` there). Writes
bench/results/<date>/bulk-writes-<rows>-<calls>-calls[-<label>].json (``--label``: so that a
second run of the day keeps the first) and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
from common import HERE, MODEL
from parquet_import import measured
from scale import BACKEND, peer_build, write_peer_data

PEERS = ("sqlite-vec", "lancedb")


def code_writers(
    tree: Path, label: str, parquet: Path, scratch: Path, calls: int
) -> dict[str, Callable]:
    """``put_vectors`` (in ``calls`` calls) and ``index --from-parquet`` as the checkout at
    ``tree`` runs them."""
    cli = tree / ".venv" / "bin" / "duckdb-vectors"
    db = scratch / f"{label}.duckdb"

    def put_vectors() -> dict[str, Any]:
        return scale_worker(tree, "put_vectors", parquet, db, calls)

    def from_parquet() -> dict[str, Any]:
        db.unlink(missing_ok=True)
        command = [str(cli), "index", "--from-parquet", str(parquet), "--db", str(db)]
        command += ["--backend", BACKEND, "--model-path", str(MODEL), "--no-progress"]
        seconds, peak = measured(command)
        db.unlink()
        return {"seconds": seconds, "peak_rss_mb": peak}

    return {f"{label} put_vectors": put_vectors, f"{label} --from-parquet": from_parquet}


def scale_worker(tree: Path, name: str, parquet: Path, db: Path, calls: int) -> dict[str, Any]:
    """One of ``scale.py``'s write workers, as the checkout at ``tree`` runs it."""
    out = db.with_suffix(".json")
    db.unlink(missing_ok=True)
    command = [str(tree / ".venv" / "bin" / "python"), str(tree / "bench" / "scale.py")]
    command += ["--worker", name, str(out), str(parquet), str(db), str(calls)]
    _, peak = measured(command)
    db.unlink()
    return json.loads(out.read_text()) | {"peak_rss_mb": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parquet", type=Path, required=True, help="write_rows' layout")
    parser.add_argument("--repeat", type=int, default=3, help="alternating rounds")
    parser.add_argument("--peers-python", help="a python with lancedb, sqlite-vec, pysqlite3")
    parser.add_argument("--baseline", type=Path, help="another checkout, with its .venv")
    parser.add_argument("--workdir", type=Path, help="for scratch files (default: a temp dir)")
    parser.add_argument("--label", help="ends the JSON's name")
    parser.add_argument(
        "--calls", type=int, default=1, help="put_vectors (and plain DuckDB) in this many calls"
    )
    arguments = parser.parse_args()
    rows = duckdb.execute(
        "SELECT count(*) FROM read_parquet(?)", [str(arguments.parquet)]
    ).fetchone()[0]
    with tempfile.TemporaryDirectory(dir=arguments.workdir) as folder:
        scratch = Path(folder)
        calls = arguments.calls
        writers = code_writers(HERE.parent, "this", arguments.parquet, scratch, calls)
        if arguments.baseline:
            writers |= code_writers(
                arguments.baseline, "baseline", arguments.parquet, scratch, calls
            )
        writers["plain DuckDB"] = lambda: scale_worker(
            HERE.parent, "plain_duckdb", arguments.parquet, scratch / "plain.duckdb", calls
        )
        if arguments.peers_python:
            write_peer_data(arguments.parquet, scratch / "peer-data")
            for system in PEERS:
                writers[system] = lambda system=system: peer_build(
                    arguments.peers_python, system, scratch / "peer-data", scratch / system
                )
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in writers}
        for round_number in range(arguments.repeat):
            for name, write in writers.items():
                runs[name].append(write())
                seconds = runs[name][-1]["seconds"]
                print(f"  {name} #{round_number + 1}: {seconds:.1f} s", flush=True)
        shutil.rmtree(scratch / "peer-data", ignore_errors=True)
    results = {
        name: {
            "seconds": statistics.median(run["seconds"] for run in done),
            "peak_rss_mb": statistics.median(run["peak_rss_mb"] for run in done),
            "runs": done,
        }
        for name, done in runs.items()
    }
    fastest_peer = min((results[p]["seconds"] for p in PEERS if p in results), default=None)
    report = {"rows": rows, "calls": calls, "loadavg_1m_end": os.getloadavg()[0], "writes": results}
    name = f"bulk-writes-{rows}-{calls}-calls" + (f"-{arguments.label}" if arguments.label else "")
    out = HERE / "results" / date.today().isoformat() / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\n{rows:,} rows in {calls} calls, median of {arguments.repeat} alternating rounds\n")
    print("| writer | seconds | rows/s | x fastest peer's time | peak RSS MB |")
    print("|---|---:|---:|---:|---:|")
    for name, result in results.items():
        ratio = f"{result['seconds'] / fastest_peer:.2f}" if fastest_peer else "—"
        print(
            f"| {name} | {result['seconds']:.1f} | {rows / result['seconds']:,.0f} | {ratio}"
            f" | {result['peak_rss_mb']:,.0f} |"
        )


if __name__ == "__main__":
    sys.exit(main())
