"""The HTTP MCP server past its limits: 10, 100 and 500 clients at once, with and without one
request in ten hostile; throughput, latency, answers by kind, /health and RSS over time.

One ``mcp --transport http`` server on loopback (its limits at their defaults but the read
timeout, ``--read-timeout``, so a slow client's turn ends within a run) serves an index of the
DuckDB docs (or --db). Each client is one keep-alive connection (raw sockets: the client side
must stay cheap beside the server on two cores) calling ``search`` in a loop for --seconds; a
client refused with 503 waits its ``Retry-After`` as a well-behaved client does. With
``--hostile`` runs, every tenth request of a client is one of: a 20 MB body declared (413), a
half-megabyte query (a tool error from the query cap), headers sent a byte at a time (408 at
the read timeout), or a body that is not JSON. Every request is bounded (a timeout each), so
the run stops by itself.

    HF_HUB_OFFLINE=1 DUCKDB_VECTORS_MODEL_PATH=../shared/models/static-256-wordllama \\
        .venv/bin/python bench/mcp_overload.py --seconds 15

Writes bench/out/mcp_overload.json (or ``--out``) and prints a Markdown table (the one in
docs/performance.md). Exit code 1 if a request got no answer at all, or /health failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from common import DOCS, MODEL, OUT, QUERIES, SCRIPT, machine, write_json
from mcp_load import SERVER_ENV, rss_kib

from duckdb_vectors import VectorStore, index_folder
from duckdb_vectors.config import HttpLimits

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
    rss: list[tuple[float, int | None]] = field(default_factory=list)


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


async def client(number: int, port: int, stop: float, hostile: bool, tally: Tally) -> None:
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
                body = search_body(QUERIES[(number + sent) % len(QUERIES)])
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
    rss: list[tuple[float, int | None]] = []
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
            rss.append((round(time.monotonic() - begin, 1), rss_kib(pid)))
        time.sleep(0.5)
    results.put((health, failures, rss))


async def load(port: int, clients: int, hostile: bool, seconds: float, tally: Tally) -> float:
    """The clients, for ``seconds``; how long they took."""
    stop = time.monotonic() + seconds
    begin = time.perf_counter()
    await asyncio.gather(*(client(number, port, stop, hostile, tally) for number in range(clients)))
    return time.perf_counter() - begin


def one_run(port: int, pid: int, clients: int, hostile: bool, seconds: float) -> dict:
    tally = Tally()
    results: multiprocessing.Queue = multiprocessing.Queue()
    watcher = multiprocessing.Process(target=watch, args=(port, pid, seconds, results))
    watcher.start()
    elapsed = asyncio.run(load(port, clients, hostile, seconds, tally))
    tally.health, tally.health_failures, tally.rss = results.get(timeout=60)
    watcher.join(timeout=60)
    ordered = sorted(tally.latencies)
    rss = [value for _, value in tally.rss if value is not None]
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(db: Path, port: int, read_timeout: float) -> subprocess.Popen:
    command = [SCRIPT, "mcp", "--transport", "http", "--port", str(port), "--db", str(db)]
    environment = {**SERVER_ENV, "DUCKDB_VECTORS_HTTP_READ_TIMEOUT": str(read_timeout)}
    process = subprocess.Popen(command, env=environment)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as answer:
                if answer.status == 200:
                    return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("the HTTP server did not become ready in 120 s")


def table(runs: list[dict]) -> str:
    lines = [
        "| clients | hostile | searches/s | p50 ms | p99 ms | answers | /health p50 / p99 ms |"
        " RSS MiB (start → peak) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        answers = ", ".join(f"{count} {kind}" for kind, count in run["answers"].items())
        rss = run["rss_mib"]
        lines.append(
            f"| {run['clients']} | {'1 in 10' if run['hostile'] else 'none'} |"
            f" {run['searches_per_s']} | {run['latency_ms']['p50']} | {run['latency_ms']['p99']}"
            f" | {answers} | {run['health_ms']['p50']} / {run['health_ms']['p99']} |"
            f" {rss['start']} → {rss['peak']} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default=",".join(map(str, CLIENTS)))
    parser.add_argument("--seconds", type=float, default=15, help="each run's duration")
    parser.add_argument("--read-timeout", type=float, default=2.0, help="the server's, seconds")
    parser.add_argument("--db", type=Path, help="an existing index (default: build one)")
    parser.add_argument("--docs", type=Path, default=DOCS)
    parser.add_argument("--out", type=Path, default=OUT / "mcp_overload.json")
    arguments = parser.parse_args()
    counts = [int(count) for count in arguments.clients.split(",")]
    with tempfile.TemporaryDirectory(prefix="mcp-overload-") as directory:
        db = arguments.db
        if db is None:
            db = Path(directory) / "docs.duckdb"
            with VectorStore(db, model_path=MODEL) as store:
                index_folder(store, arguments.docs)
        port = free_port()
        server = start_server(db, port, arguments.read_timeout)
        try:
            runs = [
                one_run(port, server.pid, count, hostile, arguments.seconds)
                for count in counts
                for hostile in (False, True)
            ]
        finally:
            server.terminate()
            server.wait(timeout=60)
    limits = HttpLimits(read_timeout=arguments.read_timeout).model_dump()
    write_json(arguments.out, {**machine(), "limits": limits, "runs": runs})
    print(table(runs))
    print(f"-> {arguments.out}")
    unanswered = sum(
        count for run in runs for kind, count in run["answers"].items() if "Error" in kind
    )
    return 0 if unanswered == 0 and not any(run["health_failures"] for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
