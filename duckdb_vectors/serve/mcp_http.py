"""The MCP server over streamable HTTP (``mcp --transport http``): ``/mcp`` and ``/health``.

Stateless (each request stands alone, answered as JSON), so replicas need no session affinity.
As the MCP specification asks, it binds to localhost unless told otherwise and refuses foreign
``Origin``s (403); a bearer token guards non-local binds.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import signal
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ..config import DEFAULT_MCP_HOST, DEFAULT_MCP_PORT
from .mcp_server import IndexServer

MCP_PATH = "/mcp"
HEALTH_PATH = "/health"

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
    """

    host: str = DEFAULT_MCP_HOST
    port: int = DEFAULT_MCP_PORT
    auth_token: str | None = None
    allowed_origins: tuple[str, ...] = ()


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
    return Guard(app, options)


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
    config = uvicorn.Config(
        http_app(server, options),
        host=options.host,
        port=options.port,
        log_level="warning",
        lifespan="on",
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
