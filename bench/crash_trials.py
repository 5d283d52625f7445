"""Crash trials: SIGKILL ``duckdb-vectors index`` at a random moment and check the index survives.

Each trial copies a baseline index (a small folder: ~40 of the DuckDB docs files, same relative
paths) to a fresh file, starts ``duckdb-vectors index <full docs folder> --db <file>`` and
SIGKILLs it at a random time between --min-kill and the measured typical run time. Then:

* the file must open read-only with ``VectorStore`` and its manifest content hash, chunk count
  and the top-3 chunk ids of 5 fixed queries must equal the baseline's -- unless the run had
  committed before the kill (it exited first, or the file already holds the full index), which
  is counted separately;
* a run to completion on the same file must give the content hash (and count and top-3) of an
  uninterrupted run on a fresh file.

    HF_HUB_OFFLINE=1 DUCKDB_VECTORS_MODEL_PATH=/work/shared/models/static-256-wordllama \\
        .venv/bin/python bench/crash_trials.py --trials 20

Writes bench/out/crash_trials.json (or ``--out``) and prints a short summary. Exit code 1 if
any trial failed.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import DOCS, MODEL, OUT, QUERIES, SCRIPT, run, write_json

from duckdb_vectors import VectorStore, index_folder


def environment() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "DUCKDB_VECTORS_MODEL_PATH": str(MODEL)}


def index_command(db: Path, docs: Path) -> list[str]:
    return [SCRIPT, "index", str(docs), "--db", str(db), "--no-progress"]


def snapshot(db: Path) -> dict[str, Any]:
    """Open read-only; content hash, count and top-3 ids for each query."""
    with VectorStore(db, model_path=MODEL, read_only=True) as store:
        manifest = store.manifest
        return {
            "content_hash": manifest.content_hash if manifest else None,
            "count": store.count(),
            "top3": {q: [hit.chunk.chunk_id for hit in store.query(q, top_k=3)] for q in QUERIES},
        }


def run_to_completion(db: Path, docs: Path, timeout: float) -> float:
    return run(index_command(db, docs), env=environment(), timeout=timeout).seconds


def small_folder(docs: Path, target: Path, files: int) -> list[str]:
    """Copy ``files`` Markdown files spread over ``docs`` to ``target``, same relative paths."""
    every = sorted(path for path in docs.rglob("*.md") if path.is_file())
    step = max(1, len(every) // files)
    chosen = every[::step][:files]
    for path in chosen:
        relative = path.relative_to(docs)
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / relative)
    return [str(path.relative_to(docs)) for path in chosen]


def differences(got: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    problems = []
    for key in ("content_hash", "count"):
        if got[key] != expected[key]:
            problems.append(f"{key}: {got[key]!r} != expected {expected[key]!r}")
    for query in QUERIES:
        if got["top3"][query] != expected["top3"][query]:
            problems.append(f"top3 {query!r}: {got['top3'][query]} != {expected['top3'][query]}")
    return problems


def trial(
    number: int,
    kill_at: float,
    template: Path,
    baseline: dict[str, Any],
    reference: dict[str, Any],
    scratch: Path,
    docs: Path,
    timeout: float,
) -> dict[str, Any]:
    db = scratch / f"trial-{number}.duckdb"
    shutil.copyfile(template, db)
    record: dict[str, Any] = {"trial": number, "kill_at_s": round(kill_at, 3), "problems": []}
    with open(scratch / f"trial-{number}.log", "wb") as log:
        started = time.perf_counter()
        process = subprocess.Popen(
            index_command(db, docs), env=environment(), stdout=log, stderr=subprocess.STDOUT
        )
        while time.perf_counter() - started < kill_at and process.poll() is None:
            time.sleep(0.005)
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            record["outcome"] = "killed"
        else:
            record["outcome"] = "completed_before_kill"
            record["exit_code"] = process.returncode
        process.wait(timeout=30)
        record["elapsed_s"] = round(time.perf_counter() - started, 3)
    record["wal_left"] = db.with_name(db.name + ".wal").exists()
    try:
        after_kill = snapshot(db)
    except Exception as error:  # the point of the trial: the file must still open
        record["problems"].append(f"reopen after kill failed: {type(error).__name__}: {error}")
        return record
    record["after_kill_hash"] = after_kill["content_hash"]
    if record["outcome"] == "killed" and after_kill["content_hash"] == reference["content_hash"]:
        # Killed after the COMMIT (while checkpointing, printing the summary or exiting).
        record["outcome"] = "committed_before_kill"
    expected = baseline if record["outcome"] == "killed" else reference
    record["problems"] += [f"after kill: {p}" for p in differences(after_kill, expected)]
    try:
        record["resume_s"] = round(run_to_completion(db, docs, timeout), 3)
        record["problems"] += [f"after resume: {p}" for p in differences(snapshot(db), reference)]
    except Exception as error:
        record["problems"].append(f"resume failed: {type(error).__name__}: {error}")
    db.unlink(missing_ok=True)
    db.with_name(db.name + ".wal").unlink(missing_ok=True)
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--docs", type=Path, default=DOCS, help="the full docs folder")
    parser.add_argument("--baseline-files", type=int, default=40)
    parser.add_argument("--min-kill", type=float, default=0.2, help="earliest kill, seconds")
    parser.add_argument(
        "--max-kill", type=float, help="latest kill, seconds (default: measured typical run time)"
    )
    parser.add_argument("--measure-runs", type=int, default=2, help="uninterrupted fresh runs")
    parser.add_argument("--timeout", type=float, default=180, help="per index run, seconds")
    parser.add_argument("--budget", type=float, default=1200, help="stop starting trials after")
    parser.add_argument("--out", type=Path, default=OUT / "crash_trials.json")
    arguments = parser.parse_args()
    generator = random.Random(arguments.seed)
    begin = time.perf_counter()

    with tempfile.TemporaryDirectory(prefix="crash-trials-") as directory:
        scratch = Path(directory)
        # Uninterrupted runs on fresh files: the typical run time and the reference hash.
        run_times, references = [], []
        for i in range(max(1, arguments.measure_runs)):
            fresh = scratch / f"fresh-{i}.duckdb"
            run_times.append(run_to_completion(fresh, arguments.docs, arguments.timeout))
            references.append(snapshot(fresh))
        reference = references[0]
        deterministic = all(not differences(other, reference) for other in references[1:])
        typical = statistics.median(run_times)
        max_kill = arguments.max_kill or typical
        print(
            f"uninterrupted run: {typical:.2f} s (median of {len(run_times)}), "
            f"{reference['count']} chunks, deterministic={deterministic}"
        )

        small = scratch / "small-docs"
        chosen = small_folder(arguments.docs, small, arguments.baseline_files)
        template = scratch / "baseline.duckdb"
        with VectorStore(template, model_path=MODEL) as store:
            index_folder(store, small)
        baseline = snapshot(template)
        print(f"baseline: {len(chosen)} files, {baseline['count']} chunks")

        records = []
        for number in range(arguments.trials):
            if time.perf_counter() - begin > arguments.budget:
                print(f"time budget reached after {number} trials")
                break
            kill_at = generator.uniform(arguments.min_kill, max_kill)
            record = trial(
                number,
                kill_at,
                template,
                baseline,
                reference,
                scratch,
                arguments.docs,
                arguments.timeout,
            )
            records.append(record)
            status = "FAIL " + "; ".join(record["problems"]) if record["problems"] else "ok"
            print(
                f"trial {number:2d}: kill at {kill_at:5.2f} s -> {record['outcome']:<22} "
                f"wal={record['wal_left']!s:<5} {status}"
            )

    outcomes = [record["outcome"] for record in records]
    failures = [record for record in records if record["problems"]]
    result = {
        "trials": len(records),
        "killed_midway": outcomes.count("killed"),
        "completed_before_kill": outcomes.count("completed_before_kill"),
        "committed_then_killed": outcomes.count("committed_before_kill"),
        "failures": len(failures),
        "failure_details": [
            {"trial": r["trial"], "kill_at_s": r["kill_at_s"], "problems": r["problems"]}
            for r in failures
        ],
        "wal_left_after_kill": sum(record["wal_left"] for record in records),
        "typical_run_s": round(typical, 3),
        "run_times_s": [round(t, 3) for t in run_times],
        "kill_window_s": [arguments.min_kill, round(max_kill, 3)],
        "uninterrupted_runs_deterministic": deterministic,
        "baseline": {
            "files": len(chosen),
            "count": baseline["count"],
            "hash": baseline["content_hash"],
        },
        "reference": {"count": reference["count"], "hash": reference["content_hash"]},
        "seed": arguments.seed,
        "seconds": round(time.perf_counter() - begin, 1),
        "records": records,
    }
    write_json(arguments.out, result)
    print(
        f"{result['trials']} trials: {result['killed_midway']} killed midway, "
        f"{result['completed_before_kill']} completed before the kill, "
        f"{result['committed_then_killed']} killed after commit, {result['failures']} failures "
        f"({result['seconds']} s) -> {arguments.out}"
    )
    return 1 if failures or not deterministic else 0


if __name__ == "__main__":
    sys.exit(main())
