"""MCP server under load: N concurrent clients calling ``search``; calls/s, latency and RSS.

Builds an index of the DuckDB docs (or takes --db) and opens --sessions client sessions: over
stdio each spawns its own ``duckdb-vectors mcp --db FILE`` (as agents do), over HTTP
(``--transport http``) they all talk to one ``mcp --transport http`` server. --tasks concurrent
tasks (default 8, spread over the sessions) call ``search`` in a loop until --seconds pass or
--max-calls calls are made. The servers' RSS (psutil if installed, else VmRSS in
/proc/PID/status) is read after a warm-up, every second, and at the end; each answer is
compared with the first answer to that query.

    HF_HUB_OFFLINE=1 DUCKDB_VECTORS_MODEL_PATH=/work/shared/models/static-256-wordllama \\
        .venv/bin/python bench/mcp_load.py --seconds 60 --tasks 8
    ... bench/mcp_load.py --transport http --sessions 16 --tasks 16 --seconds 60

Writes bench/out/mcp_load.json (or ``--out``) and prints a short summary. Exit code 1 on errors
or mismatches.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from common import DOCS, MODEL, OUT, QUERIES, SCRIPT, machine, write_json
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

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


SERVER_ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "DUCKDB_VECTORS_MODEL_PATH": str(MODEL)}


@asynccontextmanager
async def sessions(
    transport: str, count: int, db: Path
) -> AsyncIterator[tuple[list[Client], set[int]]]:
    """``count`` client sessions and the pids of the server processes behind them."""
    async with AsyncExitStack() as stack:
        if transport == "stdio":
            parameters = StdioServerParameters(
                command=SCRIPT, args=["mcp", "--db", str(db)], env=SERVER_ENV
            )
            clients = [
                await stack.enter_async_context(
                    Client(parameters, mode="legacy", read_timeout_seconds=60)
                )
                for _ in range(count)
            ]
            yield clients, server_pids(db)
            return
        url, pid = stack.enter_context(http_server(db))
        clients = []
        for _ in range(count):
            http = httpx2.AsyncClient(timeout=120)
            transport_streams = streamable_http_client(url, http_client=http)
            clients.append(
                await stack.enter_async_context(Client(transport_streams, mode="legacy"))
            )
        yield clients, {pid}


class http_server:
    """``duckdb-vectors mcp --transport http`` on a free port, ready (``/health`` 200)."""

    def __init__(self, db: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.db = db

    def __enter__(self) -> tuple[str, int]:
        command = [SCRIPT, "mcp", "--transport", "http", "--port", str(self.port)]
        self.process = subprocess.Popen([*command, "--db", str(self.db)], env=SERVER_ENV)
        health = f"http://127.0.0.1:{self.port}/health"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(health, timeout=5) as response:
                    if response.status == 200:
                        return f"http://127.0.0.1:{self.port}/mcp", self.process.pid
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("the HTTP server did not become ready in 120 s")

    def __exit__(self, *_: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


async def run(arguments: argparse.Namespace, db: Path) -> dict[str, Any]:
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

    async with sessions(arguments.transport, arguments.sessions, db) as (clients, pids):
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
        "transport": arguments.transport,
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
            "p99": round(ordered[int(0.99 * (len(ordered) - 1))] * 1000, 2) if ordered else None,
            "max": round(ordered[-1] * 1000, 2) if ordered else None,
        },
        "servers": servers,
        "servers_found": len(pids),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--tasks", type=int, default=8, help="concurrent calling tasks")
    parser.add_argument(
        "--sessions", type=int, default=1, help="client sessions (stdio: a server process each)"
    )
    parser.add_argument("--seconds", type=float, default=60, help="load duration")
    parser.add_argument("--max-calls", type=int, default=1_000_000, help="stop after this many")
    parser.add_argument("--db", type=Path, help="an existing index (default: build one)")
    parser.add_argument("--docs", type=Path, default=DOCS)
    parser.add_argument("--out", type=Path, default=OUT / "mcp_load.json")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-load-") as directory:
        db = arguments.db
        if db is None:
            db = Path(directory) / "docs.duckdb"
            with VectorStore(db, model_path=MODEL) as store:
                index_folder(store, arguments.docs)
        result = anyio.run(run, arguments, db)
    write_json(arguments.out, {**machine(), **result})
    print(
        f"{result['transport']}: {result['calls_served']} calls in {result['seconds']} s = "
        f"{result['calls_per_s']}/s ({result['tasks']} tasks, {result['sessions']} session(s));"
        f" errors {result['errors']}, mismatches {result['mismatches']}; latency median"
        f" {result['latency_ms']['median']} ms, p99 {result['latency_ms']['p99']} ms"
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
