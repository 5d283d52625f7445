"""``duckdb-vectors mcp``: retrieval for agents over the Model Context Protocol.

Three read-only tools (``search``, ``fetch``, ``report``), the documents as resources
(``duckdb-vectors://doc/{source}``, paged) and the report (``duckdb-vectors://report``).
The model and the in-memory index load in the background (``warming``), so the handshake
never waits for them. Each tool argument is declared once, as an annotated type: the SDK makes
the advertised schema of it and validates calls against it.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from collections.abc import Iterable
from typing import Annotated, Any
from urllib.parse import unquote

import anyio
from mcp.server.caching import CACHEABLE_METHODS, CacheHint
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedToolError,
)
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
)
from mcp.types import Resource as MCPResource
from mcp.types import Tool as MCPTool
from pydantic import BaseModel, Field, ValidationError
from pydantic.json_schema import SkipJsonSchema

from ..citations import DOCUMENT_URI_PREFIX, document_uri
from ..errors import EmbedderError
from ..fetching import Fetched, Neighbours, Offset, fetch, render
from ..index.db import first_line
from ..index.manifest import package_version
from ..inputs import argument_error
from ..libraries import LibraryInfo, Resolved, document_id, listed, resolve_request, scope
from ..models import IndexReport
from ..rendering import MIN_MAX_TOKENS, SearchOutput, report_as_text
from ..search.answer import Match
from ..store import VectorStore
from .served import ServedIndex
from .warming import BackgroundWarmUp

# The most hits one tool call returns: an agent pays for every token of a tool's output.
AGENT_MAX_RESULTS = 50
# Both below the 25,000 tokens Claude Code accepts from a tool, text and structure counted.
DEFAULT_MAX_TOKENS = 8_000
AGENT_MAX_TOKENS = 20_000
RESOURCES_PAGE = 100  # documents per resources/list page
REPORT_URI = "duckdb-vectors://report"
READ_ONLY = ToolAnnotations(
    read_only_hint=True, idempotent_hint=True, destructive_hint=False, open_world_hint=False
)
# The tools of every index, in the order tools/list gives whatever the registration order
# (catalogs and caches keep it); an index of several libraries lists ``libraries`` first.
CORE_TOOLS = ("search", "fetch", "report")
TOOL_ORDER = ("libraries", *CORE_TOOLS)
# How long a client may reuse answers about an index that cannot change while served: a day,
# the most the MCP SDKs honour.
IMMUTABLE_TTL_MS = 24 * 60 * 60 * 1000

# The tools' arguments (``fetching`` declares fetch's own). Strict: "5" or true for 1 is refused.
Query = Annotated[str, Field(description="What to look for, in natural language.")]
TopK = Annotated[
    int, Field(strict=True, ge=1, le=AGENT_MAX_RESULTS, description="How many chunks to return.")
]
MaxTokens = Annotated[
    int,
    Field(
        strict=True,
        ge=MIN_MAX_TOKENS,
        le=AGENT_MAX_TOKENS,
        description="Budget for the whole output, in tokens (about 4 characters each): "
        "hits past it are left out and named, the last one cut with a marker.",
    ),
]
OnePerSource = Annotated[
    bool,
    Field(
        strict=True,
        description="One hit per document, ranked as the page (default); false: every chunk.",
    ),
]
MatchArgument = Annotated[
    Match,
    Field(
        description='"all": only chunks containing every query word (if none has them all, '
        'the answer falls back to "any" and its match field says so). Default "any".'
    ),
]
# Advertised as "object" alone (null is accepted too): a type list is not portable.
Filter = Annotated[
    dict[str, Any] | SkipJsonSchema[None],
    Field(
        description="Optional metadata filter, S3 Vectors syntax, e.g. "
        '{"kind": "guide"} or {"year": {"$gte": 2024}}.'
    ),
]
Id = Annotated[
    str, Field(description="A hit's chunk_id (that chunk) or source (the whole document).")
]
# Advertised as "string" alone (null is accepted too), as Filter is.
LibraryName = Annotated[
    str | SkipJsonSchema[None],
    Field(description="Only this library (a name `libraries` lists); default: all of them."),
]
LibraryVersion = Annotated[
    str | SkipJsonSchema[None],
    Field(description="With library: only this version of it; default: every version."),
]
LibraryRequest = Annotated[
    str | SkipJsonSchema[None],
    Field(
        description="Optional: a library's loose name or a question ('ray data', 'pydantic"
        " v2', 'how do I read a parquet file in duckdb'); the libraries that fit it, best first."
    ),
]


class LibraryList(BaseModel):
    """What the ``libraries`` tool answers: every library, or those a request fits."""

    libraries: list[LibraryInfo] = Field(default_factory=list)
    resolved: list[Resolved] | None = Field(
        None, description="For a request: the libraries it fits, best first."
    )

    def as_text(self) -> str:
        if self.resolved is not None:
            if not self.resolved:
                return "No library fits that request; call libraries without one to list all."
            return "\n".join(
                f"{rank}. {answer.name}{' ' + answer.version if answer.version else ''}"
                f" ({answer.reason}){': ' + answer.description if answer.description else ''}"
                for rank, answer in enumerate(self.resolved, 1)
            )
        return "\n".join(
            f"{info.name}: versions {', '.join(v.version or '-' for v in info.versions)};"
            f" {info.chunks} chunks in {'/'.join(info.languages)}"
            f"{'; ' + info.description if info.description else ''}"
            for info in self.libraries
        )


class IndexServer(MCPServer):
    """An MCP server whose resources are the documents of one index (see ``served``)."""

    def __init__(self, served: ServedIndex, **settings: Any) -> None:
        super().__init__(**settings)
        self.served = served

    @property
    def store(self) -> VectorStore:
        return self.served.store

    @property
    def warm_up(self) -> BackgroundWarmUp:
        return self.served.warm_up

    def wait_until_loaded(self) -> None:
        """Wait for the model and the in-memory index; a tool error if they failed to load."""
        error = self.warm_up.wait()
        if isinstance(error, EmbedderError):
            raise ToolError(f"the model could not be loaded: {error}")
        if error is not None:  # the index's own error names the file and what failed
            raise ToolError(f"the index could not be loaded: {error}")

    def health(self) -> tuple[int, dict[str, Any]]:
        """An HTTP status and a summary: 200 once loaded, 503 while loading (the busy store is
        not asked), 500 if loading failed."""
        if not self.warm_up.done.is_set():
            return 503, {"status": "loading"}
        if self.warm_up.error is not None:
            return 500, {"status": "failed", "error": first_line(self.warm_up.error)}
        manifest = self.store.manifest
        return 200, {
            "status": "ready",
            "chunks": manifest.chunk_count if manifest else 0,
            "backend": self.store.backend,
            "dimension": manifest.dimension if manifest else None,
            "content_hash": manifest.content_hash if manifest else None,
        }

    async def list_tools(self) -> list[MCPTool]:
        """The tools in ``TOOL_ORDER`` (any other after them, by name)."""
        rank = {name: position for position, name in enumerate(TOOL_ORDER)}
        tools = await super().list_tools()
        return sorted(tools, key=lambda tool: (rank.get(tool.name, len(rank)), tool.name))

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        """The SDK's call, refused arguments worded as one sentence, not pydantic's report."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            refused = error.__cause__
            if isinstance(error, UnexpectedToolError) or not isinstance(refused, ValidationError):
                raise  # a crash, or the tool's own error
            sentence = argument_error(refused)
            raise ToolError(
                f"Error executing tool {name}: {sentence} (see the tool's input schema)."
            ) from refused

    async def read_resource(
        self, uri: Any, context: Context | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        """The SDK's read; an unknown URI is named quoted, so the error stays one line whatever
        the client put in it (the SDK's own message has the URI as sent, newlines and all)."""
        try:
            return await super().read_resource(uri, context)
        except ResourceNotFoundError:
            raise ResourceNotFoundError(
                f"no resource {str(uri)!r:.200}: read a URI that resources/list gives"
            ) from None

    async def list_resources(self) -> list[MCPResource]:
        """The report, then every document in source order (see ``paginate_resources``)."""
        documents = [
            MCPResource(
                uri=document_uri(source) or "",
                name=source,
                mime_type="text/markdown",
                description=f"{count} chunks",
            )
            for source, count in self.store.sources().items()
            if source
        ]
        return [*await super().list_resources(), *documents]


def cache_hints(immutable: bool, guarded: bool = False) -> dict[str, CacheHint]:
    """The caching hints of every cacheable result: fresh for ``IMMUTABLE_TTL_MS`` if the
    index is ``immutable`` (``ServedIndex.immutable``), else stale at once; public, unless a
    bearer token guards the server (a shared cache must not serve callers without it)."""
    hint = CacheHint(IMMUTABLE_TTL_MS if immutable else 0, "private" if guarded else "public")
    return dict.fromkeys(sorted(CACHEABLE_METHODS), hint)


def server_version(served: ServedIndex) -> str:
    """The package's version, plus an immutable index's content hash as its local part:
    clients cache by name and version, and two images of one release must not share."""
    manifest = served.store.manifest
    if served.immutable and manifest is not None and manifest.content_hash:
        return f"{package_version()}+{manifest.content_hash[:12]}"
    return package_version()


def build_server(
    store: VectorStore, warm_up: BackgroundWarmUp | None = None, *, guarded: bool = False
) -> IndexServer:
    """An MCP server answering from ``store``; its ``warm_up`` starts once the first request
    is answered, if not before. ``guarded``: a bearer token guards it (see ``cache_hints``)."""
    served = ServedIndex(store, warm_up or BackgroundWarmUp(store))
    held = listed(store.manifest)
    server = IndexServer(
        served,
        name="duckdb-vectors",
        version=server_version(served),
        title="duckdb-vectors retrieval",
        instructions=_instructions(held),
        log_level="WARNING",
        cache_hints=cache_hints(served.immutable, guarded),
        # No change notifications: nothing advertises listChanged or subscribe.
        subscriptions=False,
    )

    async def served_index(
        ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Answer from the index now at the path (``served``); start loading it after the first
        answer, as on one CPU a load beside the handshake only delays it."""
        await server.served.serving()
        try:
            return await call_next(ctx)
        finally:
            server.served.done()
            server.warm_up.start()

    server.middleware.extend([served_index, paginate_resources])

    @server.tool(title="Search the index", annotations=READ_ONLY)
    def search(
        query: Query,
        top_k: TopK = 5,
        filter: Filter = None,
        # Pages, not fragments: more answer pages reach the top 5 (bench/docsqa.py).
        one_per_source: OnePerSource = True,
        match: MatchArgument = "any",
        max_tokens: MaxTokens = DEFAULT_MAX_TOKENS,
        library: LibraryName = None,
        version: LibraryVersion = None,
    ) -> Annotated[CallToolResult, SearchOutput]:
        """Hybrid search: ranked chunks with their source, title, text and citation."""
        server.wait_until_loaded()
        try:  # the store checks the query's text and the filter
            scoped = _scoped(server.store, filter, library, version)
            hits = server.store.query(
                query, top_k, filter=scoped, one_per_source=one_per_source, match=match
            )
        except Exception as error:  # the model must read what to fix, whatever went wrong
            raise ToolError(first_line(error)) from None
        output = SearchOutput.of(query, hits, max_tokens, hits.match)
        return _tool_result(output.as_text(full_text=True, with_ids=True), output)

    # Not a docstring: the SDK would send its second line's indentation to clients.
    @server.tool(
        name="fetch",
        title="Read a document or a hit in context",
        description="A whole document (id = a source) or a chunk with its neighbours (id = a"
        " chunk_id), in reading order, a page at a time: pass next_offset as offset for the"
        " next page.",
        annotations=READ_ONLY,
    )
    def fetch_tool(
        id: Id,
        context: Neighbours = 0,
        max_tokens: MaxTokens = DEFAULT_MAX_TOKENS,
        offset: Offset = 0,
        library: LibraryName = None,
        version: LibraryVersion = None,
    ) -> Annotated[CallToolResult, Fetched]:
        try:  # fetch checks the id
            if library is not None:  # an id relative to the library's docs
                id = document_id(server.store.manifest, id, library, version)
            fetched = fetch(server.store, id, context=context, max_tokens=max_tokens, offset=offset)
        except Exception as error:
            raise ToolError(first_line(error)) from None
        return _tool_result(fetched.as_text(cite=True), fetched)

    if len(held) > 1:  # with one library (or none) there is nothing to choose

        @server.tool(
            name="libraries",
            title="List or resolve the libraries",
            description="The libraries whose docs the index holds (name, versions, size,"
            " description); with `request`, those that fit a loose name or a question, best"
            " first. Pass the chosen name (and version) to `search`.",
            annotations=READ_ONLY,
        )
        def libraries_tool(
            request: LibraryRequest = None,
        ) -> Annotated[CallToolResult, LibraryList]:
            if request is None or not request.strip():
                answer = LibraryList(libraries=listed(server.store.manifest))
            else:
                try:
                    answer = LibraryList(resolved=resolve_request(server.store, request))
                except Exception as error:
                    raise ToolError(first_line(error)) from None
            return _tool_result(answer.as_text(), answer)

    @server.tool(title="Describe the index", annotations=READ_ONLY)
    def report() -> Annotated[CallToolResult, IndexReport]:
        """The index: path, backend, dimensions, chunk count, sources, manifest."""
        result = server.store.report()
        more = "all sources are in the structured content and in resources/list"
        return _tool_result(report_as_text(result, more), result)

    @server.resource(REPORT_URI, name="report", mime_type="application/json")
    def report_resource() -> str:
        """The index report: backend, dimension, chunk count, sources, manifest."""
        return server.store.report().model_dump_json(indent=2)

    @server.resource(DOCUMENT_URI_PREFIX + "{+source}", name="document", mime_type="text/markdown")
    def document(source: str) -> str:
        """A document of the index, its chunks in reading order."""
        chunks = server.store.document(unquote(source))
        if not chunks:
            raise ResourceError(f"no document {source!r} in the index; see resources/list")
        return render(chunks, with_header=True)

    return server


def _instructions(held: list[LibraryInfo]) -> str:
    text = (
        "Search a document index with `search` (hybrid: meaning and exact words, so codes "
        "and identifiers are found too). Each hit has its source, heading path, text, a "
        "`uri` and, where known, a `url` to cite. `fetch` a hit's chunk_id (with `context` "
        "for its neighbours) or its source (the whole document). `report` describes the "
        "index. Outputs stay within `max_tokens` and say what they left out."
    )
    if len(held) > 1:
        names = ", ".join(info.name for info in held)
        text += (
            f" The index holds the docs of several libraries ({names}): pick one first"
            " (`libraries` with a `request` resolves a loose name or a question), then pass"
            " `library` (and `version`) to `search`. Without one, search spans them all and"
            " each hit names its library."
        )
    return text


def _scoped(
    store: VectorStore, filter: dict[str, Any] | None, library: str | None, version: str | None
) -> dict[str, Any] | None:
    """The search's filter, narrowed to ``library`` (and ``version``) when given."""
    if library is None:
        if version is not None:
            raise ToolError("version needs library: name the library it is a version of")
        return filter
    scoped = scope(store.manifest, library, version)
    return scoped if filter is None else {"$and": [filter, scoped]}


def _tool_result(text: str, structured: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=structured.model_dump(mode="json"),
    )


async def paginate_resources(
    ctx: ServerRequestContext[Any, Any], call_next: CallNext
) -> HandlerResult:
    """``resources/list`` ``RESOURCES_PAGE`` at a time, with an opaque cursor."""
    if ctx.method != "resources/list":
        return await call_next(ctx)
    params = dict(ctx.params or {})
    start = _cursor_offset(params.pop("cursor", None))
    result = await call_next(dataclasses.replace(ctx, params=params))
    if not isinstance(result, dict):
        return result
    resources = result.get("resources", [])
    end = start + RESOURCES_PAGE
    page = {**result, "resources": resources[start:end]}
    if end < len(resources):
        page["nextCursor"] = base64.urlsafe_b64encode(json.dumps({"offset": end}).encode()).decode()
    return page


def _cursor_offset(cursor: Any) -> int:
    if cursor is None:
        return 0
    try:
        offset = json.loads(base64.urlsafe_b64decode(str(cursor).encode()))["offset"]
    except (ValueError, KeyError, TypeError, binascii.Error):
        offset = None
    if not isinstance(offset, int) or offset < 0:
        raise MCPError(INVALID_PARAMS, "cursor is not valid; pass the nextCursor a page returned")
    return offset


def serve_stdio(server: IndexServer) -> None:
    """Serve over stdio until the client closes the connection."""
    anyio.run(server.run_stdio_async)
