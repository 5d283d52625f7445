"""The MCP server under load: concurrent clients calling ``search``; calls/s, latency and RSS.

Two modes over one index: the DuckDB docs (built, or ``--db``), or ``--chunks N`` synthetic
chunks (``common.write_rows`` imported with ``index --from-parquet``, as ``scale.py`` does).

**Steady** (the default): --sessions client sessions; over stdio each spawns its own
``duckdb-vectors mcp --db FILE`` (as agents do), over HTTP (``--transport http``) they all talk
to one ``mcp --transport http`` server. --tasks concurrent tasks (default 8, spread over the
sessions) call ``search`` in a loop until --seconds pass or --max-calls calls are made. The
servers' RSS is read after a warm-up, every second, and at the end; each answer is compared
with the first answer to that query.

**Overload** (``--overload``): the HTTP server past its limits. One server on loopback (its
limits at their defaults but the read timeout, ``--read-timeout``, so a slow client's turn ends
within a run) and --clients (10, 100, 500) clients at once, each one keep-alive connection (raw
sockets: the client side must stay cheap beside the server on two cores) calling ``search`` for
--seconds; a client refused with 503 waits its ``Retry-After`` as a well-behaved client does.
Each count runs quiet, then with one request in ten hostile: a 20 MB body declared (413), a
half-megabyte query (a tool error from the query cap), headers sent a byte at a time (408 at the
read timeout), or a body that is not JSON. Last, an idle flood: --idle-flood connections
opened and left silent for --seconds. The server runs with --server-files open files at most
(a container's limit; its connection cap is half that, or less); ``/health``, its RSS and its
open files are probed from a process of their own, and its log is counted for failed accepts.
Every request is bounded (a timeout each), so the run stops by itself.

    HF_HUB_OFFLINE=1 DUCKDB_VECTORS_MODEL_PATH=/work/shared/models/static-256-wordllama \\
        .venv/bin/python bench/mcp_load.py --seconds 60 --tasks 8
    ... bench/mcp_load.py --transport http --sessions 16 --tasks 16 --seconds 60
    ... bench/mcp_load.py --overload --chunks 100000 --seconds 15
    ... bench/mcp_load.py --overload --clients 10 --read-timeout 10    # the idle flood, mostly

Writes bench/out/mcp_load.json (or mcp_overload.json; ``--out``) and prints a summary (the
overload's Markdown table is the one in docs/performance.md). Exit code 1 on errors or
mismatches; with --overload, if a request got no answer at all or /health failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from common import (
    BACKEND,
    DOCS,
    MODEL,
    OUT,
    QUERIES,
    SCRIPT,
    machine,
    rss_kib,
    run,
    write_json,
    write_rows,
)
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from duckdb_vectors import VectorStore, index_folder
from duckdb_vectors.config import HttpLimits


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
    """``duckdb-vectors mcp --transport http`` on a free port, ready (``/health`` 200); ``env``:
    settings of its own (``DUCKDB_VECTORS_HTTP_*``)."""

    def __init__(
        self, db: Path, files: int | None = None, log: Path | None = None, **env: str
    ) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.db, self.files, self.log = db, files, log
        self.env = {**SERVER_ENV, **env}

    def __enter__(self) -> tuple[str, int]:
        command = [SCRIPT, "mcp", "--transport", "http", "--port", str(self.port)]
        self.process = subprocess.Popen(
            [*command, "--db", str(self.db)],
            env=self.env,
            stderr=self.log.open("w") if self.log else None,
            preexec_fn=self._limit_files if self.files else None,
        )
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

    def _limit_files(self) -> None:
        """In the server's process: at most ``files`` open files (a container's limit)."""
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.files, self.files))


async def steady(arguments: argparse.Namespace, db: Path) -> dict[str, Any]:
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


# -- overload: the HTTP server past its limits ------------------------------------------------

CLIENTS = (10, 100, 500)
HOSTILE_EVERY = 10  # one request in ten, when a run is hostile
HOSTILE_KINDS = ("big-body", "huge-query", "slow-headers", "not-json")
REQUEST_TIMEOUT = 30.0  # seconds: no request of the bench waits longer for its answer


def search_body(query: str) -> bytes:
    call = {"name": "search", "arguments": {"query": query, "top_k": 5}}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    return json.dumps(message, ensure_ascii=False).encode()


def head(port: int, length: int) -> bytes:
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


HUGE_QUERY = "".join(random.Random(1).choices("abc 北京é\n", k=500_000))


@dataclass
class Tally:
    """What one run saw: each answer by the kind of request and its status."""

    answers: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)  # served searches only
    health: list[float] = field(default_factory=list)
    health_failures: int = 0
    rss: list[tuple[float, int | None, int | None]] = field(default_factory=list)


class Connection:
    """One client's keep-alive connection, opened again when the server closes it."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def exchange(self, request: bytes, trickle: bool = False) -> tuple[int, dict, bytes]:
        if self.streams is None:
            self.streams = await asyncio.open_connection("127.0.0.1", self.port)
        reader, writer = self.streams
        answer = asyncio.ensure_future(read_response(reader))
        try:
            if trickle:
                await self._trickle(writer, request, answer)
            else:
                writer.write(request)
                await writer.drain()
            status, headers, body = await answer
        finally:
            answer.cancel()
        if headers.get("connection") == "close":
            self.close()
        return status, headers, body

    @staticmethod
    async def _trickle(
        writer: asyncio.StreamWriter, request: bytes, answer: asyncio.Future
    ) -> None:
        """Slowloris: a byte every half second until the server answers (or closes)."""
        for byte in request:
            if answer.done():
                return
            try:
                writer.write(bytes([byte]))
                await writer.drain()
            except ConnectionError:
                return
            await asyncio.wait([answer], timeout=0.5)

    def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            self.streams = None


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict, bytes]:
    status_line = (await reader.readline()).decode("latin-1")
    if not status_line:
        raise ConnectionError("closed without an answer")
    headers = {}
    while (line := (await reader.readline()).decode("latin-1").strip()) != "":
        name, _, value = line.partition(":")
        headers[name.lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", 0)))
    return int(status_line.split()[1]), headers, body


def hostile_request(kind: str, port: int) -> tuple[bytes, bool]:
    """The bytes of a hostile request of ``kind``, and whether to send them a byte at a time."""
    if kind == "big-body":
        return head(port, 20_000_000), False  # declared; the bytes never follow
    if kind == "huge-query":
        body = search_body(HUGE_QUERY)
        return head(port, len(body)) + body, False
    if kind == "slow-headers":
        return head(port, 10) + b"0123456789", True
    return head(port, 9) + b"{not json", False


async def client(
    number: int, port: int, stop: float, hostile: bool, queries: list[str], tally: Tally
) -> None:
    connection = Connection(port)
    sent = 0
    try:
        while time.monotonic() < stop:
            sent += 1
            if hostile and sent % HOSTILE_EVERY == number % HOSTILE_EVERY:
                kind = HOSTILE_KINDS[(sent // HOSTILE_EVERY + number) % len(HOSTILE_KINDS)]
                request, trickle = hostile_request(kind, port)
            else:
                kind, trickle = "search", False
                body = search_body(queries[(number + sent) % len(queries)])
                request = head(port, len(body)) + body
            started = time.perf_counter()
            try:
                status, headers, body = await asyncio.wait_for(
                    connection.exchange(request, trickle), REQUEST_TIMEOUT
                )
            except (TimeoutError, OSError, asyncio.IncompleteReadError) as error:
                tally.answers[f"{kind}: {type(error).__name__}"] += 1
                connection.close()
                continue
            tally.answers[f"{kind}: {outcome(status, body)}"] += 1
            if kind == "search" and status == 200:
                tally.latencies.append(time.perf_counter() - started)
            if status == 503:
                await asyncio.sleep(float(headers.get("retry-after", 1)))
    finally:
        connection.close()


def outcome(status: int, body: bytes) -> str:
    if status != 200:
        return str(status)
    return "200 tool error" if json.loads(body).get("result", {}).get("isError") else "200"


def watch(port: int, pid: int, seconds: float, results: multiprocessing.Queue) -> None:
    """/health twice a second and the server's RSS once a second, for ``seconds``: in a process
    of its own, so that the clients' event loop does not delay the probe it measures."""
    health: list[float] = []
    failures = 0
    rss: list[tuple[float, int | None, int | None]] = []  # seconds, RSS KiB, open files
    begin = time.monotonic()
    probes = 0
    while time.monotonic() - begin < seconds:
        probes += 1
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as answer:
                health.append(time.perf_counter() - started)
                answer.read()
        except OSError:
            failures += 1
        if probes % 2:
            rss.append((round(time.monotonic() - begin, 1), rss_kib(pid), open_files(pid)))
        time.sleep(0.5)
    results.put((health, failures, rss))


async def crowd(
    port: int, clients: int, hostile: bool, seconds: float, queries: list[str], tally: Tally
) -> float:
    """The clients, for ``seconds``; how long they took."""
    stop = time.monotonic() + seconds
    begin = time.perf_counter()
    await asyncio.gather(
        *(client(number, port, stop, hostile, queries, tally) for number in range(clients))
    )
    return time.perf_counter() - begin


def one_run(
    port: int, pid: int, clients: int, hostile: bool, seconds: float, queries: list[str]
) -> dict:
    """One overload run: ``clients`` clients for ``seconds``, ``hostile`` or not."""
    tally = Tally()
    results: multiprocessing.Queue = multiprocessing.Queue()
    watcher = multiprocessing.Process(target=watch, args=(port, pid, seconds, results))
    watcher.start()
    elapsed = asyncio.run(crowd(port, clients, hostile, seconds, queries, tally))
    tally.health, tally.health_failures, tally.rss = results.get(timeout=60)
    watcher.join(timeout=60)
    ordered = sorted(tally.latencies)
    rss = [value for _, value, _ in tally.rss if value is not None]
    return {
        "clients": clients,
        "hostile": hostile,
        "seconds": round(elapsed, 1),
        "searches_served": len(ordered),
        "searches_per_s": round(len(ordered) / elapsed, 1),
        "latency_ms": {"p50": percentile(ordered, 0.5), "p99": percentile(ordered, 0.99)},
        "answers": dict(sorted(tally.answers.items())),
        "health_ms": {
            "p50": percentile(sorted(tally.health), 0.5),
            "p99": percentile(sorted(tally.health), 0.99),
        },
        "health_failures": tally.health_failures,
        "rss_mib": {
            "start": round(rss[0] / 1024, 1) if rss else None,
            "peak": round(max(rss) / 1024, 1) if rss else None,
            "end": round(rss[-1] / 1024, 1) if rss else None,
        },
        "rss_samples": tally.rss,
    }


def percentile(ordered: list[float], share: float) -> float | None:
    """In milliseconds."""
    return round(ordered[int(share * (len(ordered) - 1))] * 1000, 1) if ordered else None


def open_files(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def idle_flood(port: int, pid: int, count: int, seconds: float) -> dict:
    """``count`` connections opened and left idle (nothing sent) for ``seconds``, while
    ``watch`` probes /health, the server's RSS and its open files."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this side needs them all
    results: multiprocessing.Queue = multiprocessing.Queue()
    watcher = multiprocessing.Process(target=watch, args=(port, pid, seconds, results))
    watcher.start()
    held, refused = [], Counter()
    begin = time.monotonic()
    stop = begin + seconds
    for _ in range(count):
        if time.monotonic() > stop:
            break
        try:
            held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError as error:
            refused[type(error).__name__] += 1
    opened_in = time.monotonic() - begin
    time.sleep(max(0.0, stop - time.monotonic()))
    closed = sum(1 for connection in held if _closed_by_server(connection))
    for connection in held:
        connection.close()
    health, failures, samples = results.get(timeout=60)
    watcher.join(timeout=60)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    ordered = sorted(health)
    files = [value for _, _, value in samples if value is not None]
    rss = [value for _, value, _ in samples if value is not None]
    return {
        "idle_connections": count,
        "opened": len(held),
        "opened_in_s": round(opened_in, 1),
        "refused": dict(refused),
        "closed_by_server": closed,
        "health_ms": {"p50": percentile(ordered, 0.5), "p99": percentile(ordered, 0.99)},
        "health_failures": failures,
        "open_files_peak": max(files) if files else None,
        "rss_mib": {
            "start": round(rss[0] / 1024, 1) if rss else None,
            "peak": round(max(rss) / 1024, 1) if rss else None,
        },
        "samples": samples,
    }


def _closed_by_server(connection: socket.socket) -> bool:
    connection.setblocking(False)
    try:
        return connection.recv(4096, socket.MSG_PEEK) is not None
    except BlockingIOError:
        return False  # open, nothing to read
    except OSError:
        return True


def flood_table(flood: dict, log: str) -> str:
    accept_errors = log.count("socket.accept() out of system resource")
    return (
        f"idle flood: {flood['opened']:,} of {flood['idle_connections']:,} connections opened in"
        f" {flood['opened_in_s']} s ({flood['refused'] or 'none refused'}),"
        f" {flood['closed_by_server']:,} closed by the server; its open files peak"
        f" {flood['open_files_peak']}, RSS {flood['rss_mib']['start']} → {flood['rss_mib']['peak']}"
        f" MiB; /health p50 / p99 {flood['health_ms']['p50']} / {flood['health_ms']['p99']} ms,"
        f" {flood['health_failures']} failed; {accept_errors:,} accept errors logged"
    )


def overload_table(runs: list[dict]) -> str:
    """The runs as docs/performance.md shows them: a hostile entry's p99 against the quiet entry's
    of the same clients (the check: within 3x)."""
    quiet = {entry["clients"]: entry["latency_ms"]["p99"] for entry in runs if not entry["hostile"]}
    lines = [
        "| clients | hostile | searches/s | served p50 / p99 ms | p99 against quiet |"
        " searches refused 503 | hostile requests answered | `/health` p50 / p99 ms |"
        " RSS MiB start → peak → end |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for entry in runs:
        latency, health, rss = entry["latency_ms"], entry["health_ms"], entry["rss_mib"]
        answers = entry["answers"]
        refused = answers.get("search: 503", 0)
        hostile = ", ".join(
            f"{kind.replace(': ', ' ')} x{count}"
            for kind, count in answers.items()
            if not kind.startswith("search: ")
        )
        baseline = quiet.get(entry["clients"])
        ratio = (
            f"{latency['p99'] / baseline:.1f}x"
            if entry["hostile"] and baseline and latency["p99"]
            else ""
        )
        lines.append(
            f"| {entry['clients']} | {'1 in 10' if entry['hostile'] else 'none'} |"
            f" {entry['searches_per_s']} | {latency['p50']:,} / {latency['p99']:,} | {ratio} |"
            f" {refused:,} | {hostile} | {health['p50']} / {health['p99']} |"
            f" {rss['start']} → {rss['peak']} → {rss['end']} |"
        )
    return "\n".join(lines)


def overload(arguments: argparse.Namespace, db: Path, queries: list[str]) -> dict[str, Any]:
    """Each client count quiet, then hostile, against one server."""
    read_timeout = str(arguments.read_timeout)
    with tempfile.TemporaryDirectory(prefix="mcp-overload-") as folder:
        log = Path(folder, "server.log")
        server = http_server(
            db, arguments.server_files, log, DUCKDB_VECTORS_HTTP_READ_TIMEOUT=read_timeout
        )
        with server as (_, pid):
            runs = [
                one_run(server.port, pid, count, hostile, arguments.seconds, queries)
                for count in arguments.clients
                for hostile in (False, True)
            ]
            flood = idle_flood(server.port, pid, arguments.idle_flood, arguments.seconds)
        server_log = log.read_text(errors="replace")
    limits = HttpLimits(read_timeout=arguments.read_timeout).model_dump()
    return {
        "limits": limits,
        "server_files": arguments.server_files,
        "runs": runs,
        "idle_flood": flood,
        "server_log_lines": server_log.count("\n"),
        "flood_summary": flood_table(flood, server_log),
    }


# -- the index ----------------------------------------------------------------------------------


def synthetic_index(chunks: int, folder: Path) -> Path:
    """An index of ``chunks`` synthetic chunks (``scale.py``'s rows), the static model's."""
    parquet, db = folder / "rows.parquet", folder / f"synthetic-{chunks}.duckdb"
    write_rows(parquet, chunks)
    command = [SCRIPT, "index", "--from-parquet", parquet, "--db", db, "--backend", BACKEND]
    run([*command, "--model-path", MODEL, "--no-progress"], env=SERVER_ENV)
    return db


def query_set(chunks: int | None) -> list[str]:
    """The questions; over synthetic chunks each also names two of their words, so BM25 has
    postings to read as it would over real text."""
    if chunks is None:
        return QUERIES
    words = random.Random(5)
    return [f"{query} word{words.randrange(5000)} word{words.randrange(5000)}" for query in QUERIES]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--overload", action="store_true", help="the HTTP server past its limits")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--tasks", type=int, default=8, help="concurrent calling tasks")
    parser.add_argument(
        "--sessions", type=int, default=1, help="client sessions (stdio: a server process each)"
    )
    parser.add_argument("--seconds", type=float, help="each run's duration (60; overload 15)")
    parser.add_argument("--max-calls", type=int, default=1_000_000, help="stop after this many")
    parser.add_argument(
        "--clients",
        type=lambda text: [int(count) for count in text.split(",")],
        default=list(CLIENTS),
        help="overload: the client counts, e.g. 10,100,500",
    )
    parser.add_argument("--read-timeout", type=float, default=2.0, help="overload: the server's")
    parser.add_argument(
        "--idle-flood", type=int, default=6000, help="overload: idle connections opened at the end"
    )
    parser.add_argument(
        "--server-files", type=int, default=4096, help="overload: the server's open-file limit"
    )
    parser.add_argument("--db", type=Path, help="an existing index (default: build one)")
    parser.add_argument("--chunks", type=int, help="build it of this many synthetic chunks")
    parser.add_argument("--docs", type=Path, default=DOCS, help="else of this docs folder")
    parser.add_argument("--out", type=Path)
    arguments = parser.parse_args()
    arguments.seconds = arguments.seconds or (15 if arguments.overload else 60)
    name = "mcp_overload" if arguments.overload else "mcp_load"
    out = arguments.out or OUT / f"{name}.json"
    with tempfile.TemporaryDirectory(prefix="mcp-load-") as directory:
        db = arguments.db
        if db is None and arguments.chunks:
            db = synthetic_index(arguments.chunks, Path(directory))
        elif db is None:
            db = Path(directory) / "docs.duckdb"
            with VectorStore(db, model_path=MODEL) as store:
                index_folder(store, arguments.docs)
        with VectorStore(db, read_only=True, model_path=MODEL) as store:
            chunks = {"chunks": store.count()}
        if arguments.overload:
            result = overload(arguments, db, query_set(arguments.chunks))
        else:
            result = anyio.run(steady, arguments, db)
    write_json(out, {**machine(), **chunks, **result})
    if arguments.overload:
        print(f"{overload_table(result['runs'])}\n\n{result['flood_summary']}")
    else:
        print(steady_summary(result))
    print(f"-> {out}")
    if arguments.overload:
        runs = result["runs"]
        unanswered = sum(
            count for entry in runs for kind, count in entry["answers"].items() if "Error" in kind
        )
        failed = any(entry["health_failures"] for entry in [*runs, result["idle_flood"]])
        return 0 if unanswered == 0 and not failed else 1
    ok = result["errors"] == 0 and result["mismatches"] == 0 and result["servers_found"]
    return 0 if ok else 1


def steady_summary(result: dict[str, Any]) -> str:
    lines = [
        f"{result['transport']}: {result['calls_served']} calls in {result['seconds']} s = "
        f"{result['calls_per_s']}/s ({result['tasks']} tasks, {result['sessions']} session(s));"
        f" errors {result['errors']}, mismatches {result['mismatches']}; latency median"
        f" {result['latency_ms']['median']} ms, p99 {result['latency_ms']['p99']} ms"
    ]
    for server in result["servers"]:
        lines.append(
            f"  server pid {server['pid']}: RSS start {server['rss_start_kib'] / 1024:.1f} MiB, "
            f"end {server['rss_end_kib'] / 1024:.1f} MiB, drift "
            f"{server['rss_drift_kib'] / 1024:+.1f} MiB, peak {server['rss_peak_kib'] / 1024:.1f}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
