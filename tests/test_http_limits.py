"""What a client nobody vetted may ask of ``mcp --transport http`` (``config.HttpLimits``),
tried over real sockets against a real server on loopback: bodies too big or too slow, headers a
byte at a time, more requests at once than it takes, requests it cannot answer in time."""

from __future__ import annotations

import json
import os
import random
import resource
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pytest
from conftest import DEFAULT_BACKEND, STATIC_MODEL, get, http_server

from duckdb_vectors import VectorStore
from duckdb_vectors.serve.mcp_http import connection_cap

MEGABYTE = 1_000_000
READ_TIMEOUT = 1.5  # seconds: long enough for a loaded machine, short for the tests
# Small limits, so a few sockets fill them: one request worked on, one waiting.
LIMITS = {
    "DUCKDB_VECTORS_HTTP_READ_TIMEOUT": str(READ_TIMEOUT),
    "DUCKDB_VECTORS_HTTP_MAX_CONCURRENCY": "1",
    "DUCKDB_VECTORS_HTTP_QUEUE": "1",
}
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("http-limits") / "served.duckdb"
    with VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(
            ids=["retries", "errors"],
            texts=[
                "Failed requests are retried three times with exponential backoff.",
                "Error E1234 means the API key is missing.",
            ],
            sources=["guides/retries.md", "reference/errors.md"],
        )
    return path


@pytest.fixture(scope="module")
def server(index: Path) -> Iterator[str]:
    with http_server(index, env=LIMITS) as (base, _):
        yield base


def search_body(query: str, request_id: int = 1) -> bytes:
    call = {"name": "search", "arguments": {"query": query, "top_k": 2}}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": call}
    return json.dumps(message, ensure_ascii=False).encode()


def request_head(base: str, length: int | None = None, path: str = "/mcp") -> bytes:
    """A POST's request line and headers, as a client writes them on the socket."""
    lines = [f"POST {path} HTTP/1.1", f"Host: {urlsplit(base).netloc}"]
    lines += [f"{name}: {value}" for name, value in JSON_HEADERS.items()]
    lines.append(
        f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    )
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def connect(base: str) -> socket.socket:
    parts = urlsplit(base)
    connection = socket.create_connection((parts.hostname, parts.port), timeout=30)
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return connection


def read_response(connection: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One response (status, headers by lowercase name, body) off the socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        assert chunk, f"the connection closed before a response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in header_lines)
    length = int(headers.get("content-length", 0))
    while len(body) < length:
        chunk = connection.recv(65536)
        assert chunk, "the connection closed inside the body"
        body += chunk
    return int(status_line.split()[1]), headers, body


def closed_by_server(connection: socket.socket) -> bool:
    try:
        return connection.recv(1) == b""
    except ConnectionResetError:
        return True


@pytest.mark.slow
def test_a_20_mb_body_is_answered_413_before_it_is_sent(server: str) -> None:
    """Its Content-Length is enough: the 413 arrives while the client has sent no byte of the
    body, and the connection closes (the body is never read into memory)."""
    with connect(server) as connection:
        started = time.monotonic()
        connection.sendall(request_head(server, 20 * MEGABYTE))
        status, headers, body = read_response(connection)
        assert time.monotonic() - started < 2
        assert status == 413 and headers["connection"] == "close"
        expected = "the request body is 20,000,000 bytes, more than the 1,000,000 bytes allowed"
        assert json.loads(body) == {"error": expected}


@pytest.mark.slow
def test_a_client_that_sends_20_mb_before_reading_gets_its_413(server: str) -> None:
    """urllib writes the whole body, then reads (and asks the server to close): the server
    drops the rest of the body for a moment before it closes, so the answer is a 413, not a
    reset connection."""
    request = urllib.request.Request(
        f"{server}/mcp", data=b" " * (20 * MEGABYTE), headers=JSON_HEADERS, method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 413
    assert "more than the 1,000,000 bytes allowed" in json.load(refused.value)["error"]


@pytest.mark.slow
def test_a_chunked_body_is_cut_off_at_the_cap_and_one_within_it_is_served(server: str) -> None:
    def chunks(total: int, size: int = 64 * 1024) -> Iterator[bytes]:
        for start in range(0, total, size):
            yield b" " * min(size, total - start)

    # No Content-Length: the server counts the chunks and answers once they pass the cap.
    refused = httpx2.post(f"{server}/mcp", content=chunks(5 * MEGABYTE), headers=JSON_HEADERS)
    assert refused.status_code == 413
    assert refused.json() == {"error": "the request body is more than the 1,000,000 bytes allowed"}

    def search_in_chunks() -> Iterator[bytes]:
        body = search_body("retries")
        yield from (body[i : i + 10] for i in range(0, len(body), 10))

    served = httpx2.post(f"{server}/mcp", content=search_in_chunks(), headers=JSON_HEADERS)
    assert served.status_code == 200
    assert served.json()["result"]["structuredContent"]["results"][0]["chunk_id"] == "retries"


@pytest.mark.slow
def test_headers_sent_a_byte_at_a_time_do_not_hold_the_server(server: str) -> None:
    """Slowloris: a connection whose headers are not all in within the read timeout gets 408
    and is closed; meanwhile everyone else is answered at once."""
    head = request_head(server, 10)
    with connect(server) as connection:
        started = time.monotonic()
        sent = 0
        while not _readable(connection) and time.monotonic() - started < 10 * READ_TIMEOUT:
            connection.send(head[sent : sent + 1])  # far fewer bytes than the headers have
            sent += 1
            assert get(f"{server}/health")[0] == 200
            time.sleep(0.25)
        waited = time.monotonic() - started
        status, headers, _ = read_response(connection)
        assert status == 408 and headers["connection"] == "close"
        assert READ_TIMEOUT - 0.1 < waited < READ_TIMEOUT + 3, waited
        assert sent < len(head)
        assert closed_by_server(connection)


@pytest.mark.slow
def test_a_body_sent_a_byte_at_a_time_is_answered_408(server: str) -> None:
    with connect(server) as connection:
        started = time.monotonic()
        connection.sendall(request_head(server, 1000))
        while not _readable(connection) and time.monotonic() - started < 10 * READ_TIMEOUT:
            connection.send(b" ")
            time.sleep(0.25)
        status, headers, body = read_response(connection)
        assert status == 408 and headers["connection"] == "close"
        assert json.loads(body) == {"error": f"the body did not arrive within {READ_TIMEOUT:g} s"}
        assert time.monotonic() - started < READ_TIMEOUT + 3


def _readable(connection: socket.socket) -> bool:
    connection.setblocking(False)
    try:
        return bool(connection.recv(1, socket.MSG_PEEK))
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        connection.setblocking(True)


@pytest.mark.slow
def test_requests_past_the_turns_and_the_queue_get_503_with_retry_after(server: str) -> None:
    """Forty searches land at once on a server that works on one and queues one: the others
    are refused at once with 503 and Retry-After, every search is answered one way or the
    other, and /health answers throughout."""
    # A long query (about 15 ms of work each) keeps the first turn busy while the rest land.
    query = "".join(random.Random(1).choices("abc 北京é\n", k=9_000))
    request = request_head(server, len(search_body(query))) + search_body(query)
    connections = [connect(server) for _ in range(40)]
    answers: list[tuple[int, dict[str, str], bytes]] = []

    def ask(connection: socket.socket) -> None:
        connection.sendall(request)
        answers.append(read_response(connection))

    threads = [threading.Thread(target=ask, args=(c,)) for c in connections]
    try:
        for thread in threads:
            thread.start()
        started = time.monotonic()
        assert get(f"{server}/health")[0] == 200
        assert time.monotonic() - started < 2  # 0.04 s on an idle machine
        for thread in threads:
            thread.join(timeout=60)
    finally:
        for connection in connections:
            connection.close()
    statuses = Counter(status for status, _, _ in answers)
    assert sum(statuses.values()) == 40 and set(statuses) == {200, 503}, statuses
    # One turn and one place in the queue: 38 of 40 refused on an idle machine; fewer where a
    # loaded one spreads their arrival over more than a search's time.
    assert statuses[503] >= 10, statuses
    for status, headers, body in answers:
        if status == 503:
            assert headers["retry-after"] == "1" and headers["connection"] == "close"
            assert json.loads(body) == {"error": "the server is busy: try again shortly"}
        else:
            assert "isError" in json.loads(body)["result"]
    # Past the crowd, a lone request is served again.
    assert httpx2.post(
        f"{server}/mcp", content=search_body("retries"), headers=JSON_HEADERS
    ).is_success


@pytest.mark.slow
def test_a_megabyte_query_over_http_is_refused_in_milliseconds(server: str) -> None:
    """A megabyte query is a body past the cap (413); half a megabyte is a one-line tool error
    from the query cap, answered before any search work."""
    too_big = httpx2.post(
        f"{server}/mcp", content=search_body("x" * MEGABYTE), headers=JSON_HEADERS
    )
    assert too_big.status_code == 413
    query = "".join(random.Random(1).choices("abc 北京é\n", k=MEGABYTE // 2))
    started = time.monotonic()
    answer = httpx2.post(f"{server}/mcp", content=search_body(query), headers=JSON_HEADERS)
    elapsed = time.monotonic() - started
    result = answer.json()["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text == (
        "Error executing tool search: the query has 500,000 characters, more than the 10,000"
        " allowed (DUCKDB_VECTORS_MAX_QUERY_CHARS): ask a shorter question"
    )
    assert elapsed < 0.5, elapsed  # a search of it took 1.6 s before the cap


@pytest.mark.slow
def test_a_request_not_answered_in_time_gets_504_and_the_server_goes_on(index: Path) -> None:
    # No search is answered in a millisecond, with its round trip through the SDK.
    limits = {"DUCKDB_VECTORS_HTTP_REQUEST_TIMEOUT": "0.001"}
    with http_server(index, env=limits) as (base, process):
        for _ in range(3):
            late = httpx2.post(f"{base}/mcp", content=search_body("retries"), headers=JSON_HEADERS)
            assert late.status_code == 504
            assert late.json() == {"error": "no answer within 0.001 s"}
            assert get(f"{base}/health")[0] == 200
        process.terminate()
        assert process.wait(timeout=30) == 0
        assert "Traceback" not in process.stderr.read()


def _open_sockets(pid: int) -> int:
    return sum(
        1 for fd in Path(f"/proc/{pid}/fd").iterdir() if os.readlink(fd).startswith("socket:")
    )


@pytest.mark.slow
def test_a_flood_of_idle_connections_evicts_its_own_and_health_still_gets_in(index: Path) -> None:
    """Past DUCKDB_VECTORS_HTTP_MAX_CONNECTIONS a new connection closes the oldest idle one
    (503 with Retry-After: it had sent nothing): the server's sockets stay at the cap, and a new
    client is served, where a full server would let no one in."""
    cap, flood = 20, 120
    with http_server(index, env={"DUCKDB_VECTORS_HTTP_MAX_CONNECTIONS": str(cap)}) as (
        base,
        process,
    ):
        idle = [connect(base) for _ in range(flood)]
        try:
            assert get(f"{base}/health")[0] == 200
            first = idle[0]
            status, headers, _ = read_response(first)
            assert (status, headers["retry-after"], headers["connection"]) == (503, "1", "close")
            assert closed_by_server(first)
            deadline = time.monotonic() + 10
            while _open_sockets(process.pid) > cap + 1 and time.monotonic() < deadline:
                time.sleep(0.1)  # the listening socket, and at most cap connections
            assert _open_sockets(process.pid) <= cap + 1
            with connect(base) as newcomer:  # and a search gets in too
                body = search_body("how are retries done?")
                newcomer.sendall(request_head(base, len(body)) + body)
                status, _, answer = read_response(newcomer)
                assert status == 200 and b"retries" in answer
        finally:
            for connection in idle:
                connection.close()


@pytest.mark.slow
def test_past_the_cap_a_connection_inside_a_request_is_not_the_one_closed(index: Path) -> None:
    """The oldest connection is sending its body (its request begun): the one evicted for a
    newcomer is the oldest idle one, and the request is answered."""
    with http_server(index, env={"DUCKDB_VECTORS_HTTP_MAX_CONNECTIONS": "2"}) as (base, _):
        body = search_body("how are retries done?")
        with connect(base) as busy, connect(base) as idle:
            busy.sendall(request_head(base, len(body)) + body[:5])
            time.sleep(0.5)  # its headers are in: the server has begun the request
            with connect(base) as newcomer:
                status, headers, _ = read_response(idle)
                assert (status, headers["retry-after"]) == (503, "1")
                busy.sendall(body[5:])
                status, _, answer = read_response(busy)
                assert status == 200 and b"retries" in answer
                assert not _readable(newcomer)  # kept, waiting for its request


def test_the_connection_cap_leaves_half_the_open_files_to_the_process() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 256), hard))
        cap = connection_cap(1_000_000)
        raised, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        assert raised == hard  # the soft limit is raised as far as it may go first
        assert cap == (1_000_000 if hard == resource.RLIM_INFINITY else hard // 2)
        assert connection_cap(10) == 10
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
