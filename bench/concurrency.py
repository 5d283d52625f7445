"""Concurrent readers on one frozen index, and the single-writer lock.

1. Builds a frozen index of the DuckDB docs (or takes --db) and records a single reader's
   top-5 chunk ids for 20 fixed queries.
2. Runs 8 readers for --seconds: 4 SDK processes (``VectorStore(read_only=True)``, looping over
   the queries) and 4 ``duckdb-vectors mcp --db FILE`` servers, each driven by one mcp client
   calling ``search``. Every answer must equal the single reader's; no call may fail.
3. While the readers hold the file, a writer must fail fast with a clear "locked" error: tried
   in-process (``VectorStore(path)``), as a fresh Python process and as ``duckdb-vectors index``
   (the console-script entry point, in a fresh process). For fresh processes the time from the
   open (or the command) to the error is reported, and the wall time with start-up separately.
4. After the readers stop, one process holds the file read-write; a second writer (and a reader)
   must fail fast too. The content hash must not change through all of this.

    HF_HUB_OFFLINE=1 DUCKDB_VECTORS_MODEL_PATH=/work/shared/models/static-256-wordllama \\
        .venv/bin/python bench/concurrency.py --seconds 30

Writes bench/out/concurrency.json and prints a short summary. Exit code 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
from common import DOCS, HERE, MODEL, QUERIES, SCRIPT, write_json
from mcp import Client, StdioServerParameters

from duckdb_vectors import VectorStore, index_folder

TOP_K = 5
LOCK_DEADLINE_S = 5.0

# One SDK reader process: ready marker after its first query, then loop until the deadline.
SDK_READER = """
import json, sys, time
from collections import Counter, defaultdict
from pathlib import Path
from duckdb_vectors import VectorStore
db, model, seconds, result, ready = sys.argv[1], sys.argv[2], float(sys.argv[3]), *sys.argv[4:6]
queries, top_k = json.loads(sys.argv[6]), int(sys.argv[7])
answers, errors, served = defaultdict(Counter), [], 0
with VectorStore(db, model_path=model, read_only=True) as store:
    store.warm_up()
    store.query(queries[0], top_k=top_k)
    Path(ready).write_text("ready")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for query in queries:
            try:
                ids = [hit.chunk.chunk_id for hit in store.query(query, top_k=top_k)]
                answers[query][json.dumps(ids)] += 1
                served += 1
            except Exception as error:
                errors.append(f"{query!r}: {type(error).__name__}: {error}")
Path(result).write_text(json.dumps({"served": served, "errors": errors[:20],
    "error_count": len(errors), "answers": answers}))
"""

# Holds the file read-write until its stdin closes (or --hold seconds pass).
HOLDER = """
import sys, select
from pathlib import Path
from duckdb_vectors import VectorStore
with VectorStore(sys.argv[1], model_path=sys.argv[2]):
    Path(sys.argv[3]).write_text("holding")
    select.select([sys.stdin], [], [], float(sys.argv[4]))
"""

# Fresh processes: on a loaded machine interpreter start-up and imports take seconds, so each
# reports how long the open (or the CLI command) itself took before failing, on stdout.
OPEN_FILE = """
import sys, time
from duckdb_vectors import VectorStore
begin = time.perf_counter()
try:
    VectorStore(sys.argv[1], read_only=sys.argv[2] == "ro")
finally:
    print(f"inner_s={time.perf_counter() - begin}")
"""
CLI = """
import sys, time
from duckdb_vectors.cli import main
sys.argv[0] = "duckdb-vectors"
begin = time.perf_counter()
try:
    main()
finally:
    print(f"inner_s={time.perf_counter() - begin}")
"""


def environment() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "DUCKDB_VECTORS_MODEL_PATH": str(MODEL)}


def single_reader(db: Path) -> dict[str, list[str]]:
    with VectorStore(db, model_path=MODEL, read_only=True) as store:
        return {q: [h.chunk.chunk_id for h in store.query(q, top_k=TOP_K)] for q in QUERIES}


def content_hash(db: Path) -> str | None:
    with VectorStore(db, model_path=MODEL, read_only=True) as store:
        return store.manifest.content_hash if store.manifest else None


def attempt_in_process(db: Path, read_only: bool = False) -> dict[str, Any]:
    """Open the file in this process; it must fail with a one-line 'locked' error."""
    begin = time.perf_counter()
    try:
        VectorStore(db, model_path=MODEL, read_only=read_only).close()
        error = None
    except Exception as raised:
        error = f"{type(raised).__name__}: {raised}"
    seconds = time.perf_counter() - begin
    return judged("in-process", seconds, seconds, error, None)


def attempt_command(kind: str, command: list[str]) -> dict[str, Any]:
    """Run a command that must exit non-zero quickly with a 'locked' message on stderr."""
    begin = time.perf_counter()
    try:
        done = subprocess.run(
            command, env=environment(), capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        seconds = time.perf_counter() - begin
        return judged(kind, seconds, seconds, "HANG: no exit within 60 s", None)
    seconds = time.perf_counter() - begin
    lines = done.stderr.strip().splitlines()
    error = lines[-1] if done.returncode != 0 and lines else None
    inner = [line for line in done.stdout.splitlines() if line.startswith("inner_s=")]
    inner_s = float(inner[-1].split("=")[1]) if inner else seconds
    return judged(kind, inner_s, seconds, error, done.returncode)


def judged(
    kind: str, seconds: float, wall: float, error: str | None, code: int | None
) -> dict[str, Any]:
    """``seconds``: from the open to the error; ``wall``: with process start-up and imports."""
    ok = error is not None and "locked" in error.lower() and seconds < LOCK_DEADLINE_S
    return {
        "how": kind,
        "seconds": round(seconds, 3),
        "wall_s": round(wall, 3),
        "exit_code": code,
        "error": error,
        "ok": ok,
    }


def writer_attempts(db: Path, small_docs: Path, read_only: bool = False) -> list[dict[str, Any]]:
    python = [sys.executable, "-c", OPEN_FILE, str(db), "ro" if read_only else "rw"]
    attempts = [
        attempt_in_process(db, read_only),
        attempt_command("python process", python),
    ]
    if not read_only:
        command = [sys.executable, "-c", CLI, "index", str(small_docs), "--db", str(db)]
        attempts.append(attempt_command("duckdb-vectors index", [*command, "--no-progress"]))
    return attempts


async def mcp_reader(
    db: Path,
    seconds: float,
    state: dict[str, Any],
    ready: anyio.Event,
    ready_count: list[int],
    readers: int,
) -> None:
    parameters = StdioServerParameters(
        command=SCRIPT, args=["mcp", "--db", str(db)], env=environment()
    )
    answers: dict[str, Counter] = {q: Counter() for q in QUERIES}
    errors: list[str] = []
    served, counted = 0, False

    def count_ready() -> None:
        nonlocal counted
        if not counted:
            counted = True
            ready_count[0] += 1
            if ready_count[0] == readers:
                ready.set()

    try:
        async with Client(parameters, mode="legacy", read_timeout_seconds=60) as client:
            await client.call_tool("search", {"query": QUERIES[0], "top_k": TOP_K})
            count_ready()
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                for query in QUERIES:
                    try:
                        result = await client.call_tool("search", {"query": query, "top_k": TOP_K})
                        if result.is_error:
                            errors.append(f"{query!r}: tool error {result.content}")
                            continue
                        hits = result.structured_content["results"]
                        answers[query][json.dumps([hit["chunk_id"] for hit in hits])] += 1
                        served += 1
                    except Exception as error:
                        errors.append(f"{query!r}: {type(error).__name__}: {error}")
    except Exception as error:
        errors.append(f"session: {type(error).__name__}: {error}")
        count_ready()
    state.update(served=served, errors=errors[:20], error_count=len(errors), answers=answers)


def mismatches(answers: dict[str, Any], reference: dict[str, list[str]]) -> list[str]:
    found = []
    for query, counts in answers.items():
        for answer, times in counts.items():
            if json.loads(answer) != reference[query]:
                found.append(f"{query!r} answered {answer} x{times}, expected {reference[query]}")
    return found


async def readers_phase(
    db: Path, small_docs: Path, seconds: float, sdk: int, mcp: int, scratch: Path
) -> dict[str, Any]:
    reference = single_reader(db)
    processes = []
    for i in range(sdk):
        command = [
            sys.executable,
            "-c",
            SDK_READER,
            str(db),
            str(MODEL),
            str(seconds),
            str(scratch / f"sdk-{i}.json"),
            str(scratch / f"sdk-{i}.ready"),
            json.dumps(QUERIES),
            str(TOP_K),
        ]
        processes.append(subprocess.Popen(command, env=environment()))
    states: list[dict[str, Any]] = [{} for _ in range(mcp)]
    mcp_ready, ready_count = anyio.Event(), [0]
    lock_attempts: list[dict[str, Any]] = []
    readers_alive_during_lock_test = False

    async def lock_test() -> None:
        nonlocal readers_alive_during_lock_test
        with anyio.fail_after(120):
            if mcp:
                await mcp_ready.wait()
            while not all((scratch / f"sdk-{i}.ready").exists() for i in range(sdk)):
                await anyio.sleep(0.05)
        before = all(process.poll() is None for process in processes)
        lock_attempts.extend(await anyio.to_thread.run_sync(writer_attempts, db, small_docs, False))
        after = all(process.poll() is None for process in processes)
        readers_alive_during_lock_test = before and after and mcp_ready.is_set() == bool(mcp)

    begin = time.perf_counter()
    async with anyio.create_task_group() as group:
        for state in states:
            group.start_soon(mcp_reader, db, seconds, state, mcp_ready, ready_count, mcp)
        group.start_soon(lock_test)
    for process in processes:
        await anyio.to_thread.run_sync(lambda p=process: p.wait(timeout=seconds + 120))
    wall = time.perf_counter() - begin

    readers = []
    for i, process in enumerate(processes):
        path = scratch / f"sdk-{i}.json"
        if path.exists():
            state = json.loads(path.read_text())
        else:
            state = {"served": 0, "errors": [f"exit {process.returncode}"], "error_count": 1}
            state["answers"] = {}
        readers.append({"kind": "sdk", **state})
    readers += [{"kind": "mcp", **state} for state in states]
    for reader in readers:
        reader["mismatches"] = mismatches(reader.pop("answers", {}), reference)
    return {
        "wall_s": round(wall, 1),
        "readers": readers,
        "lock_while_readers": lock_attempts,
        "readers_alive_during_lock_test": readers_alive_during_lock_test,
    }


def writer_phase(db: Path, small_docs: Path, scratch: Path, hold: float) -> dict[str, Any]:
    marker = scratch / "holding"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db), str(MODEL), str(marker), str(hold)],
        env=environment(),
        stdin=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and holder.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if not marker.exists():
        holder.kill()
        return {"error": "the first writer never got the file", "second_writer": []}
    second = writer_attempts(db, small_docs, False)
    reader = writer_attempts(db, small_docs, True)
    alive = holder.poll() is None
    holder.stdin.close()
    holder.wait(timeout=60)
    return {"first_writer_alive": alive, "second_writer": second, "reader_while_writer": reader}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30, help="how long each reader runs")
    parser.add_argument("--sdk", type=int, default=4, help="SDK reader processes")
    parser.add_argument("--mcp", type=int, default=4, help="MCP servers (one client each)")
    parser.add_argument("--db", type=Path, help="an existing index (default: build one)")
    parser.add_argument("--docs", type=Path, default=DOCS)
    parser.add_argument("--hold", type=float, default=120, help="max seconds the writer holds")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "concurrency.json")
    arguments = parser.parse_args()
    begin = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="concurrency-") as directory:
        scratch = Path(directory)
        small_docs = scratch / "small-docs"
        small_docs.mkdir()
        (small_docs / "note.md").write_text("# Note\n\nA writer that must not get the lock.\n")
        db = arguments.db
        if db is None:
            db = scratch / "frozen.duckdb"
            with VectorStore(db, model_path=MODEL) as store:
                index_folder(store, arguments.docs)
        hash_before = content_hash(db)
        phase = anyio.run(
            readers_phase, db, small_docs, arguments.seconds, arguments.sdk, arguments.mcp, scratch
        )
        writers = writer_phase(db, small_docs, scratch, arguments.hold)
        hash_after = content_hash(db)

    readers = phase["readers"]
    attempts = (
        phase["lock_while_readers"]
        + writers.get("second_writer", [])
        + writers.get("reader_while_writer", [])
    )
    result = {
        "readers": {"sdk": arguments.sdk, "mcp": arguments.mcp, "seconds": arguments.seconds},
        "queries_served": sum(reader["served"] for reader in readers),
        "served_sdk": sum(r["served"] for r in readers if r["kind"] == "sdk"),
        "served_mcp": sum(r["served"] for r in readers if r["kind"] == "mcp"),
        "errors": sum(reader["error_count"] for reader in readers),
        "mismatches": sum(len(reader["mismatches"]) for reader in readers),
        "readers_wall_s": phase["wall_s"],
        "readers_alive_during_lock_test": phase["readers_alive_during_lock_test"],
        "lock_while_readers": phase["lock_while_readers"],
        "first_writer": {k: v for k, v in writers.items() if k != "second_writer"},
        "second_writer": writers.get("second_writer", []),
        "hash_unchanged": hash_before == hash_after,
        "per_reader": readers,
        "seconds": round(time.perf_counter() - begin, 1),
    }
    ok = (
        result["errors"] == 0
        and result["mismatches"] == 0
        and result["hash_unchanged"]
        and result["readers_alive_during_lock_test"]
        and attempts
        and all(attempt["ok"] for attempt in attempts)
        and "error" not in writers
    )
    result["ok"] = bool(ok)
    write_json(arguments.out, result)
    print(
        f"{result['queries_served']} queries served (sdk {result['served_sdk']}, "
        f"mcp {result['served_mcp']}) in {phase['wall_s']} s; errors {result['errors']}, "
        f"mismatches {result['mismatches']}, hash unchanged {result['hash_unchanged']}"
    )
    for label, group in [
        ("writer while readers", phase["lock_while_readers"]),
        ("second writer", writers.get("second_writer", [])),
        ("reader while writer", writers.get("reader_while_writer", [])),
    ]:
        for attempt in group:
            print(
                f"  {label:<20} {attempt['how']:<20} {attempt['seconds']:6.2f} s "
                f"(wall {attempt['wall_s']:5.2f} s) "
                f"{'ok ' if attempt['ok'] else 'BAD'} {attempt['error']}"
            )
    print(f"ok={result['ok']} ({result['seconds']} s) -> {arguments.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
