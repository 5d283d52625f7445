"""MCP server under load: N concurrent clients calling ``search`` on one server; calls/s and RSS.

Builds an index of the DuckDB docs (or takes --db), spawns ``duckdb-vectors mcp --db FILE``
(one server process per --sessions, default 1) and runs --tasks concurrent tasks (default 8,
spread over the sessions) that call ``search`` in a loop until --seconds pass or --max-calls
calls are made. The server's RSS (psutil if installed, else VmRSS in /proc/PID/status) is read
after a warm-up, every second, and at the end; each answer is compared with the server's own
first answer to that query.

    HF_HUB_OFFLINE=1 DUCKDB_VECTORS_MODEL_PATH=/work/shared/models/static-256-wordllama \\
        .venv/bin/python bench/mcp_load.py --seconds 60 --tasks 8

Writes bench/out/mcp_load.json and prints a short summary. Exit code 1 on errors or mismatches.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from common import DOCS, HERE, MODEL, QUERIES, SCRIPT, write_json
from mcp import Client, StdioServerParameters

from duckdb_vectors import VectorStore, index_folder


def rss_kib(pid: int) -> int | None:
    try:
        import psutil

        return psutil.Process(pid).memory_info().rss // 1024
    except ImportError:
        pass
    except Exception:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def server_pids(db: Path) -> set[int]:
    """Our child processes serving ``db`` (the stdio client does not expose the pid)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if parent == os.getpid() and b"mcp" in command and str(db).encode() in command:
            found.add(int(entry.name))
    return found


async def run(arguments: argparse.Namespace, db: Path) -> dict[str, Any]:
    parameters = StdioServerParameters(
        command=SCRIPT,
        args=["mcp", "--db", str(db)],
        env={**os.environ, "HF_HUB_OFFLINE": "1", "DUCKDB_VECTORS_MODEL_PATH": str(MODEL)},
    )
    served, errors, mismatches, latencies = [0], [], [], []
    reference: dict[str, list[str]] = {}
    samples: dict[int, list[tuple[float, int | None]]] = {}
    stop_at = [0.0]

    async def call(client: Client, query: str) -> None:
        begin = time.perf_counter()
        try:
            result = await client.call_tool("search", {"query": query, "top_k": 5})
        except Exception as error:
            errors.append(f"{query!r}: {type(error).__name__}: {error}")
            return
        latencies.append(time.perf_counter() - begin)
        if result.is_error:
            errors.append(f"{query!r}: tool error {result.content}")
            return
        ids = [hit["chunk_id"] for hit in result.structured_content["results"]]
        if ids != reference.setdefault(query, ids):
            mismatches.append(f"{query!r}: {ids} != {reference[query]}")
        served[0] += 1

    async def worker(client: Client, number: int) -> None:
        i = number
        while time.monotonic() < stop_at[0] and served[0] + len(errors) < arguments.max_calls:
            await call(client, QUERIES[i % len(QUERIES)])
            i += 1

    async def sampler(pids: set[int]) -> None:
        begin = time.monotonic()
        while time.monotonic() < stop_at[0]:
            await anyio.sleep(1)
            for pid in pids:
                samples[pid].append((round(time.monotonic() - begin, 1), rss_kib(pid)))

    async with AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(
                Client(parameters, mode="legacy", read_timeout_seconds=60)
            )
            for _ in range(arguments.sessions)
        ]
        pids = server_pids(db)
        # Warm-up: the model and in-memory index load, every query answered once (reference).
        for client in clients:
            for query in QUERIES:
                await call(client, query)
        warm_calls, served[0] = served[0], 0
        latencies.clear()
        await anyio.sleep(0.5)
        start_rss = {pid: rss_kib(pid) for pid in pids}
        for pid in pids:
            samples[pid] = [(0.0, start_rss[pid])]
        begin = time.perf_counter()
        stop_at[0] = time.monotonic() + arguments.seconds
        with anyio.fail_after(arguments.seconds + 120):  # a hung server must not hang this
            async with anyio.create_task_group() as group:
                group.start_soon(sampler, pids)
                for number in range(arguments.tasks):
                    group.start_soon(worker, clients[number % len(clients)], number)
        # The sampler ends at the deadline; a --max-calls stop leaves it to catch up.
        elapsed = time.perf_counter() - begin
        end_rss = {pid: rss_kib(pid) for pid in pids}
    servers = [
        {
            "pid": pid,
            "rss_start_kib": start_rss[pid],
            "rss_end_kib": end_rss[pid],
            "rss_drift_kib": (end_rss[pid] or 0) - (start_rss[pid] or 0),
            "rss_peak_kib": max(value or 0 for _, value in samples[pid]),
            "rss_samples": samples[pid],
        }
        for pid in sorted(pids)
    ]
    ordered = sorted(latencies)
    return {
        "sessions": arguments.sessions,
        "tasks": arguments.tasks,
        "warm_up_calls": warm_calls,
        "calls_served": served[0],
        "errors": len(errors),
        "error_samples": errors[:20],
        "mismatches": len(mismatches),
        "mismatch_samples": mismatches[:20],
        "seconds": round(elapsed, 2),
        "calls_per_s": round(served[0] / elapsed, 1) if elapsed else None,
        "latency_ms": {
            "median": round(statistics.median(ordered) * 1000, 2) if ordered else None,
            "p95": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2) if ordered else None,
            "max": round(ordered[-1] * 1000, 2) if ordered else None,
        },
        "servers": servers,
        "servers_found": len(pids),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8, help="concurrent calling tasks")
    parser.add_argument("--sessions", type=int, default=1, help="server processes (sessions)")
    parser.add_argument("--seconds", type=float, default=60, help="load duration")
    parser.add_argument("--max-calls", type=int, default=1_000_000, help="stop after this many")
    parser.add_argument("--db", type=Path, help="an existing index (default: build one)")
    parser.add_argument("--docs", type=Path, default=DOCS)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "mcp_load.json")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-load-") as directory:
        db = arguments.db
        if db is None:
            db = Path(directory) / "docs.duckdb"
            with VectorStore(db, model_path=MODEL) as store:
                index_folder(store, arguments.docs)
        result = anyio.run(run, arguments, db)
    write_json(arguments.out, result)
    print(
        f"{result['calls_served']} calls in {result['seconds']} s = {result['calls_per_s']}/s "
        f"({result['tasks']} tasks, {result['sessions']} session(s)); errors {result['errors']}, "
        f"mismatches {result['mismatches']}; latency median {result['latency_ms']['median']} ms, "
        f"p95 {result['latency_ms']['p95']} ms"
    )
    for server in result["servers"]:
        print(
            f"  server pid {server['pid']}: RSS start {server['rss_start_kib'] / 1024:.1f} MiB, "
            f"end {server['rss_end_kib'] / 1024:.1f} MiB, drift "
            f"{server['rss_drift_kib'] / 1024:+.1f} MiB, peak {server['rss_peak_kib'] / 1024:.1f}"
        )
    print(f"-> {arguments.out}")
    ok = result["errors"] == 0 and result["mismatches"] == 0 and result["servers_found"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
