"""The MCP server over streamable HTTP (``mcp --transport http``): ``/mcp`` and ``/health``.

Stateless (each request stands alone, answered as JSON), so replicas need no session affinity.
As the MCP specification asks, it binds to localhost unless told otherwise and refuses foreign
``Origin``s (403); a bearer token guards non-local binds.

Clients nobody vetted are bounded (``config.HttpLimits``), in the order a request meets them:
past the cap on open connections a new one closes the oldest idle one (``BoundedH11``), its
headers must arrive within the read timeout, its body too and within the size cap (413, 408),
then it waits for one of a few turns in a short queue (503 with ``Retry-After`` past it) and
must be answered within the request timeout (504). ``/health`` skips all but the first two, so
a load balancer sees a busy server as alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import logging
import resource
import signal
import threading
from dataclasses import dataclass, field
from typing import ClassVar
from urllib.parse import urlsplit

import anyio
import h11
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..config import DEFAULT_MCP_HOST, DEFAULT_MCP_PORT, HttpLimits
from .mcp_server import IndexServer

MCP_PATH = "/mcp"
HEALTH_PATH = "/health"
# What a refused client is told to wait before it tries again: a turn frees up in milliseconds.
RETRY_AFTER_SECONDS = 1
# After a 413 the rest of the body is read and dropped for this long, at most this much, before
# the connection closes: a client that sends its whole body before it reads (urllib, most
# scripts) then gets the answer, where closing at once would reset the connection under it.
LINGER_SECONDS = 2.0
LINGER_BYTES = 64_000_000
# Connections the kernel holds until they are accepted, and so the most accepted in one turn of
# the event loop (uvicorn's default, 2048, lets a burst take thousands of files at once).
BACKLOG = 511

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class HttpOptions:
    """Where and for whom the HTTP server listens.

    Args:
        host: the address to bind; anything but loopback is reachable from other machines.
        port: the TCP port.
        auth_token: if set, ``/mcp`` requires ``Authorization: Bearer <token>``.
        allowed_origins: browser origins allowed besides loopback ones, e.g.
            ``https://agents.example.com``.
        limits: what one client may ask (``config.HttpLimits``).
    """

    host: str = DEFAULT_MCP_HOST
    port: int = DEFAULT_MCP_PORT
    auth_token: str | None = None
    allowed_origins: tuple[str, ...] = ()
    limits: HttpLimits = field(default_factory=HttpLimits)


def http_app(server: IndexServer, options: HttpOptions) -> ASGIApp:
    """The ASGI app: ``/mcp`` (stateless, JSON responses) and ``/health``, behind the guard."""

    @server.custom_route(HEALTH_PATH, methods=["GET"])
    async def health(_request: Request) -> Response:
        status, summary = server.health()
        return JSONResponse(summary, status_code=status)

    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        # Origin and token are checked by Guard, for every bind address alike.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        host=options.host,
    )
    return Guard(Limits(app, options.limits), options)


def serve_http(server: IndexServer, options: HttpOptions) -> None:
    """Serve until SIGTERM or Ctrl-C, finishing the requests in flight. The load starts now:
    a load balancer waits for ``/health``, not for a first request."""
    server.warm_up.start()
    if not is_loopback(options.host) and options.auth_token is None:
        logger.warning(
            "serving on %s without --auth-token: anyone who reaches port %d can search the index",
            options.host,
            options.port,
        )
    # Not uvicorn's limit_concurrency: it counts idle connections too, refuses /health with the
    # rest, and sends no Retry-After; Limits does all three. Its keep-alive timeout (5 s) closes
    # idle connections between requests; h11 caps the headers at 16 KiB.
    config = uvicorn.Config(
        http_app(server, options),
        host=options.host,
        port=options.port,
        log_level="warning",
        lifespan="on",
        http=bounded_h11(options.limits),
        backlog=BACKLOG,
    )
    # After its graceful shutdown uvicorn raises SIGTERM again for the handler it found: one
    # that does nothing lets the process exit 0 (store closed) instead of 143.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda _signal, _frame: None)
    uvicorn.Server(config).run()


class Guard:
    """Refuses foreign browser origins (403) and, with a token, unauthenticated MCP calls
    (401). ``/health`` needs no token: load balancers probe it."""

    def __init__(self, app: ASGIApp, options: HttpOptions) -> None:
        self.app = app
        self.options = options

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self._refusal(Request(scope)) or _no_stream(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, request: Request) -> Response | None:
        origin = request.headers.get("origin")
        if origin is not None and not self._allowed_origin(origin):
            return JSONResponse({"error": f"origin {origin} is not allowed"}, status_code=403)
        token = self.options.auth_token
        if token is None or request.url.path == HEALTH_PATH:
            return None
        given = request.headers.get("authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return None
        return JSONResponse(
            {"error": "missing or wrong bearer token"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )

    def _allowed_origin(self, origin: str) -> bool:
        if origin in self.options.allowed_origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and is_loopback(parts.hostname or "")


class Limits:
    """Bounds each ``/mcp`` request: its body (size, time), its turn, its time to an answer."""

    def __init__(self, app: ASGIApp, limits: HttpLimits) -> None:
        self.app = app
        self.limits = limits
        self.turns = anyio.Semaphore(limits.max_concurrency)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != MCP_PATH:
            await self.app(scope, receive, send)
            return
        replay = await self._read_body(scope, receive, send)
        if replay is None:
            return  # refused, answered
        if self._queue_full():
            await _refuse(send, 503, "the server is busy: try again shortly")
            return
        await self._answer_in_time(scope, replay, send)

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """The whole body, read within the read timeout and the size cap, as a ``receive``
        that hands it on; None once a refusal (413, 408) is sent."""
        cap = self.limits.max_body
        declared = _content_length(scope)
        if declared is not None and declared > cap:
            await _too_large(scope, receive, send, cap, declared)
            return None
        body = bytearray()
        with anyio.move_on_after(self.limits.read_timeout):
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return _replay(message, receive)  # the client left: the app sees it leave
                body += message.get("body", b"")
                if len(body) > cap:
                    await _too_large(scope, receive, send, cap, None)
                    return None
                if not message.get("more_body", False):
                    return _replay({"type": "http.request", "body": bytes(body)}, receive)
        seconds = self.limits.read_timeout
        await _refuse(send, 408, f"the body did not arrive within {seconds:g} s")
        return None

    def _queue_full(self) -> bool:
        return self.turns.value == 0 and self.turns.statistics().tasks_waiting >= self.limits.queue

    async def _answer_in_time(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app's answer, or 503 (still queued) or 504 (being worked on) at the request
        timeout. A tool runs in a thread nothing can stop: its turn is held until it ends, so
        the server never works on more than ``max_concurrency`` requests."""
        answer = _Answer(send)
        async with anyio.create_task_group() as group:
            group.start_soon(self._deadline, answer, group.cancel_scope)
            async with self.turns:
                answer.working = True
                await self.app(scope, receive, answer.send)
            group.cancel_scope.cancel()

    async def _deadline(self, answer: _Answer, request: anyio.CancelScope) -> None:
        await anyio.sleep(self.limits.request_timeout)
        if answer.started:
            return
        answer.late = True
        seconds = self.limits.request_timeout
        if answer.working:
            await _refuse(answer.deliver, 504, f"no answer within {seconds:g} s")
        else:
            busy = f"the server is busy: no turn within {seconds:g} s, try again shortly"
            await _refuse(answer.deliver, 503, busy)
        request.cancel()


class _Answer:
    """The app's side of one response: whether it started, and whether it came too late (then
    what the app still sends is dropped: the client has its 503 or 504)."""

    def __init__(self, send: Send) -> None:
        self.deliver = send
        self.started = False
        self.working = False
        self.late = False

    async def send(self, message: Message) -> None:
        if self.late:
            return
        self.started = True
        await self.deliver(message)


def _replay(first: Message, receive: Receive) -> Receive:
    """A ``receive`` that hands ``first`` on, then the client's own (which tells when it
    leaves)."""
    messages = [first]

    async def replay() -> Message:
        return messages.pop() if messages else await receive()

    return replay


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # h11 refuses the request before it gets here
    return None


async def _too_large(
    scope: Scope, receive: Receive, send: Send, cap: int, declared: int | None
) -> None:
    """413, sent before the body is read; the rest of the body is then read and dropped for a
    moment (``LINGER_SECONDS``) unless the client waits for a 100 Continue or declared more than
    ``LINGER_BYTES``, and the connection closed."""
    size = f"{declared:,} bytes, more" if declared is not None else "more"
    message = f"the request body is {size} than the {cap:,} bytes allowed"
    waits = (b"expect", b"100-continue") in scope["headers"]
    linger = not waits and (declared or 0) <= LINGER_BYTES
    await _refuse(send, 413, message, receive if linger else None)


async def _drain(receive: Receive) -> None:
    dropped = 0
    with anyio.move_on_after(LINGER_SECONDS):
        while dropped <= LINGER_BYTES:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                return
            dropped += len(message.get("body", b""))


async def _refuse(send: Send, status: int, error: str, linger: Receive | None = None) -> None:
    """A one-line JSON error; the connection closes after it. 503 says when to retry. With
    ``linger``, the response ends only once the rest of the body is read from it (``_drain``)."""
    headers = {"Connection": "close"}
    if status == 503:
        headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response = JSONResponse({"error": error}, status_code=status, headers=headers)
    start = {"type": "http.response.start", "status": status, "headers": response.raw_headers}
    await send(start)
    await send({"type": "http.response.body", "body": response.body, "more_body": True})
    if linger is not None:
        await _drain(linger)
    await send({"type": "http.response.body", "body": b""})


def bounded_h11(limits: HttpLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol within ``limits``' read timeout and cap on open connections, for
    one server (the connections it counts are its own)."""

    class Protocol(BoundedH11):
        timeout = limits.read_timeout
        max_connections = connection_cap(limits.max_connections)
        open_connections: ClassVar[dict[BoundedH11, None]] = {}

    return Protocol


def connection_cap(wanted: int) -> int:
    """``wanted``, or half the files the process may open if that is fewer. Past the file limit
    every accept fails (asyncio logs a traceback for each) and /health cannot get in; the other
    half leaves room for the connections accepted in a burst before any is closed (up to
    ``BACKLOG`` a turn of the event loop) and the process's own files. The soft limit is raised
    to the hard one first, as far as the system allows without privileges."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft // 2))


class BoundedH11(H11Protocol):
    """Two bounds uvicorn lacks:

    - a deadline (``timeout``) for each request's headers, armed when the connection opens and
      when the next request's first bytes come in, stopped once h11 has all the headers
      (uvicorn's own timer covers only the idle time between requests, and any byte stops it):
      a client sending a byte a second (slowloris) holds a connection no longer than that;
    - at most ``max_connections`` open: a new connection past them closes the oldest one that
      is not in the middle of a request (idle, or still sending its headers), or itself if
      every one is. A flood of idle connections then evicts its own, and a new client (/health)
      still gets in; uvicorn's ``limit_concurrency`` would refuse it with the rest.
    """

    timeout = 10.0
    max_connections = 1000
    open_connections: ClassVar[dict[BoundedH11, None]]  # oldest first; one per server

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.headers_deadline: asyncio.TimerHandle | None = None
        self.open_connections[self] = None
        if len(self.open_connections) > self.max_connections:
            self._make_room()
        self._await_headers()

    def data_received(self, data: bytes) -> None:
        cycle = self.cycle
        super().data_received(data)
        if self.cycle is not cycle:  # a request's headers are all in
            self._stop_waiting()
        elif cycle is not None and cycle.response_complete and self.headers_deadline is None:
            self._await_headers()  # the first bytes of the next request on this connection

    def connection_lost(self, exc: Exception | None) -> None:
        self.open_connections.pop(self, None)
        self._stop_waiting()
        super().connection_lost(exc)

    @property
    def idle(self) -> bool:
        """No request of this connection is being answered: none yet, or the last one was."""
        return self.cycle is None or self.cycle.response_complete

    def _make_room(self) -> None:
        oldest = next((other for other in self.open_connections if other.idle), self)
        oldest._close_unanswered(b"503 Service Unavailable", RETRY_AFTER_SECONDS)

    def _await_headers(self) -> None:
        self.headers_deadline = self.loop.call_later(self.timeout, self._headers_too_late)

    def _stop_waiting(self) -> None:
        if self.headers_deadline is not None:
            self.headers_deadline.cancel()
            self.headers_deadline = None

    def _headers_too_late(self) -> None:
        self.headers_deadline = None
        self._close_unanswered(b"408 Request Timeout")

    def _close_unanswered(self, status: bytes, retry_after: int | None = None) -> None:
        """Close the connection, telling a client whose request h11 has not begun why."""
        self.open_connections.pop(self, None)
        if self.transport.is_closing():
            return
        if self.conn.our_state is h11.IDLE and self.conn.their_state is h11.IDLE:
            # No request to answer through h11 yet: the one response that needs none.
            wait = b"" if retry_after is None else b"Retry-After: %d\r\n" % retry_after
            self.transport.write(
                b"HTTP/1.1 %s\r\nContent-Length: 0\r\n%sConnection: close\r\n\r\n" % (status, wait)
            )
        self.transport.close()


def _no_stream(scope: Scope) -> Response | None:
    """``GET /mcp`` asks for a stream of server messages; a stateless server has none (405, as
    the specification allows), rather than hold the connection open."""
    if scope["path"] == MCP_PATH and scope["method"] == "GET":
        return JSONResponse(
            {"error": "this server sends no stream: POST requests to /mcp"},
            status_code=405,
            headers={"Allow": "POST"},
        )
    return None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
