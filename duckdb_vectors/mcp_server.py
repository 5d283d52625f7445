"""``duckdb-vectors mcp``: retrieval as two read-only tools over stdio (Model Context Protocol).

An agent (Docker Agent, Claude Desktop, Claude Code, Cursor) spawns this as a subprocess and
speaks JSON-RPC on its stdin/stdout. The index file is opened before the server starts (a bad
path fails at once, with one line on stderr); the model and the in-memory index load in a
background thread, so ``initialize`` is answered immediately and the first ``search`` waits
only for what is left of the load.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from .db import first_line
from .manifest import package_version
from .models import IndexReport
from .rendering import SearchOutput, hits_as_text, report_as_text, search_record
from .store import VectorStore

# The most hits one tool call returns: an agent pays for every token of a tool's output.
AGENT_MAX_RESULTS = 50
READ_ONLY = ToolAnnotations(
    read_only_hint=True, idempotent_hint=True, destructive_hint=False, open_world_hint=False
)


class _WarmUp:
    """Loads the model and the in-memory index once, in the background."""

    def __init__(self, store: VectorStore) -> None:
        self.store = store
        self.done = threading.Event()
        self.error: BaseException | None = None

    def start(self) -> None:
        threading.Thread(target=self._run, name="warm-up", daemon=True).start()

    def _run(self) -> None:
        try:
            self.store.warm_up()
        except BaseException as error:  # reported to the caller of the first search
            self.error = error
        finally:
            self.done.set()

    def wait(self) -> None:
        self.done.wait()
        if self.error is not None:
            raise ToolError(f"the model could not be loaded: {self.error}")


def build_server(store: VectorStore) -> MCPServer:
    """An MCP server answering from ``store``; its warm-up starts when the server does."""
    warm_up = _WarmUp(store)

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[None]:
        warm_up.start()
        yield

    server = MCPServer(
        name="duckdb-vectors",
        version=package_version(),
        title="duckdb-vectors retrieval",
        instructions=(
            "Search a document index with `search` (hybrid: meaning and exact words, so codes "
            "and identifiers are found too). Each result has its source, heading path and text. "
            "`report` describes the index: sources, size, model."
        ),
        lifespan=lifespan,
        log_level="WARNING",
    )

    @server.tool(title="Search the index", annotations=READ_ONLY)
    def search(
        query: Annotated[str, Field(description="What to look for, in natural language.")],
        top_k: Annotated[
            int, Field(ge=1, le=AGENT_MAX_RESULTS, description="How many chunks to return.")
        ] = 5,
        filter: Annotated[
            dict[str, Any] | None,
            Field(
                description="Optional metadata filter, S3 Vectors syntax, e.g. "
                '{"kind": "guide"} or {"year": {"$gte": 2024}}.'
            ),
        ] = None,
    ) -> Annotated[CallToolResult, SearchOutput]:
        """Hybrid search: ranked chunks with their source, title and text."""
        if not query.strip():
            raise ToolError("query must be a non-empty string, e.g. 'how do retries work?'")
        warm_up.wait()
        try:
            hits = store.query(query, top_k, filter=filter)
        except Exception as error:  # the model must read what to fix, whatever went wrong
            raise ToolError(first_line(error)) from None
        return CallToolResult(
            content=[TextContent(type="text", text=hits_as_text(hits, full_text=True))],
            structured_content=search_record(query, hits),
        )

    @server.tool(title="Describe the index", annotations=READ_ONLY)
    def report() -> Annotated[CallToolResult, IndexReport]:
        """The index: path, backend, dimensions, chunk count, sources, manifest."""
        result = store.report()
        return CallToolResult(
            content=[TextContent(type="text", text=report_as_text(result))],
            structured_content=result.model_dump(mode="json"),
        )

    return server


def serve(
    db_path: Path | None = None,
    backend: str | None = None,
    model_path: Path | None = None,
    read_only: bool = True,
) -> None:
    """Open the index and serve it over stdio until the client closes the connection."""
    store = VectorStore(db_path, backend, model_path=model_path, read_only=read_only)
    try:
        anyio.run(build_server(store).run_stdio_async)
    finally:
        store.close()
