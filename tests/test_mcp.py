"""The MCP server, spawned as ``duckdb-vectors mcp`` and driven by the mcp SDK's stdio client."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from conftest import DEFAULT_BACKEND, SCRIPT, STATIC_MODEL
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from duckdb_vectors import UrlRule, VectorStore, index_folder
from duckdb_vectors.index.manifest import package_version
from duckdb_vectors.resources import available_cpus
from duckdb_vectors.serve.mcp_server import (
    CORE_TOOLS,
    IMMUTABLE_TTL_MS,
    RESOURCES_PAGE,
    cache_hints,
)

EXAMPLE_DOCS = Path(__file__).resolve().parent.parent / "examples" / "docs"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "served.duckdb"
    with VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(
            ids=["retries", "errors", "db"],
            texts=[
                "Failed requests are retried three times with exponential backoff.",
                "Error E1234 means the API key is missing.",
                "Results are cached in an embedded analytical database.",
            ],
            metadatas=[{"kind": "guide"}, {"kind": "reference"}, {"kind": "guide"}],
            sources=["guides/retries.md", "reference/errors.md", "guides/cache.md"],
            titles=["Retries", "Errors", "Caching"],
        )
    return path


def server(index: Path, *arguments: str, **env: str) -> StdioServerParameters:
    environment = {
        "DUCKDB_VECTORS_DB_PATH": str(index),
        "DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL),
        "HF_HUB_OFFLINE": "1",
        **env,
    }
    return StdioServerParameters(command=SCRIPT, args=["mcp", *arguments], env=environment)


def session(parameters: StdioServerParameters) -> Client:
    return Client(parameters, mode="legacy", read_timeout_seconds=60)


def test_initialize_and_list_tools(index: Path) -> None:
    async def scenario() -> None:
        async with session(server(index)) as client:
            assert client.server_info.name == "duckdb-vectors"
            # Clients cache by name and version; this index can be replaced while served, so
            # the version names no content (a baked image's does: tests/test_container.py).
            assert client.server_info.version == package_version()
            assert "search" in (client.instructions or "")
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == {"search", "fetch", "report"}
            for tool in tools.values():
                # Clients and catalogs (the image's label) show the description as sent.
                assert "\n " not in tool.description, tool.description
                assert tool.annotations.read_only_hint is True
                assert tool.annotations.destructive_hint is False
                assert tool.output_schema["type"] == "object"
            properties = tools["search"].input_schema["properties"]
            assert set(properties) == {
                "query",
                "top_k",
                "filter",
                "one_per_source",
                "match",
                "max_tokens",
                "library",
                "version",
            }
            assert properties["library"]["type"] == "string"  # one type, as filter's
            assert properties["match"]["enum"] == ["any", "all"]
            assert tools["search"].input_schema["required"] == ["query"]
            assert properties["top_k"]["maximum"] == 50
            assert properties["max_tokens"]["default"] == 8000
            assert properties["filter"]["type"] == "object"  # one type: portable to all clients
            fetch_schema = tools["fetch"].input_schema
            assert set(fetch_schema["properties"]) == {
                "id",
                "context",
                "max_tokens",
                "offset",
                "library",
                "version",
            }
            assert fetch_schema["required"] == ["id"]
            assert "results" in tools["search"].output_schema["properties"]
            assert "chunk_count" in tools["report"].output_schema["properties"]

    anyio.run(scenario)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("flags", "ttl_ms"),
    [([], 0), (["--read-write"], 0)],
    ids=["read-only", "writable"],
)
def test_2026_cache_hints_say_whether_the_index_can_change(
    index: Path, tmp_path: Path, flags: list[str], ttl_ms: int
) -> None:
    """On the 2026-07-28 era (the SDK client's default negotiation), every cacheable result
    of an index that can change is stale at once: a writable one, and a read-only one in a
    folder a writer can swap a new index into. (One that cannot change, a baked image's, stays
    fresh a day: tests/test_container.py.)"""
    served = index
    if flags:  # a copy: the module's index stays read-only for the other tests
        served = tmp_path / "writable.duckdb"
        served.write_bytes(index.read_bytes())

    async def scenario() -> None:
        async with Client(server(served, *flags), read_timeout_seconds=60) as client:
            assert client.protocol_version == "2026-07-28"
            for listed in (
                await client.list_tools(cache_mode="refresh"),
                await client.list_resources(cache_mode="refresh"),
                await client.read_resource("duckdb-vectors://report", cache_mode="refresh"),
            ):
                assert (listed.ttl_ms, listed.cache_scope) == (ttl_ms, "public")
            tools = await client.list_tools(cache_mode="refresh")
            assert [tool.name for tool in tools.tools] == list(CORE_TOOLS)

    anyio.run(scenario)


def test_a_bearer_token_makes_the_cache_scope_private() -> None:
    for immutable, ttl_ms in ((True, IMMUTABLE_TTL_MS), (False, 0)):
        hints = cache_hints(immutable, guarded=True)
        assert {(hint.ttl_ms, hint.scope) for hint in hints.values()} == {(ttl_ms, "private")}
        assert {"server/discover", "tools/list", "resources/read"} <= set(hints)


def test_search_returns_structured_content_and_readable_text(index: Path) -> None:
    async def scenario() -> None:
        async with session(server(index)) as client:
            result = await client.call_tool("search", {"query": "how often are requests retried?"})
            assert result.is_error is False
            first = result.structured_content["results"][0]
            assert (first["chunk_id"], first["source"], first["title"]) == (
                "retries",
                "guides/retries.md",
                "Retries",
            )
            text = result.content[0].text
            assert text.startswith("1. [") and "guides/retries.md | Retries" in text
            assert "retried three times" in text

            filtered = await client.call_tool(
                "search", {"query": "guide", "top_k": 5, "filter": {"kind": "reference"}}
            )
            assert [r["chunk_id"] for r in filtered.structured_content["results"]] == ["errors"]

            every = await client.call_tool("search", {"query": "E1234 API key", "match": "all"})
            assert every.structured_content["match"] == "all"
            assert [r["chunk_id"] for r in every.structured_content["results"]] == ["errors"]
            fallback = await client.call_tool("search", {"query": "E1234 backoff", "match": "all"})
            assert fallback.structured_content["match"] == "any (no chunk has every term)"
            assert fallback.content[0].text.startswith("[No chunk has every query term;")

    anyio.run(scenario)


@pytest.mark.slow
def test_report_tool(index: Path) -> None:
    async def scenario() -> None:
        async with session(server(index)) as client:
            result = await client.call_tool("report", {})
            report = result.structured_content
            assert report["chunk_count"] == 3 and report["dimension"] == 256
            assert report["backend"] == DEFAULT_BACKEND
            assert report["sources"]["guides/retries.md"] == 1
            assert "chunks      3" in result.content[0].text

    anyio.run(scenario)


# Each bad call, with what its one-sentence error says: the argument, the bound it broke (or
# what it must be) and what was given.
BAD_CALLS = [
    ("search", {"query": "  "}, "the query text must be a non-empty string"),
    ("search", {"query": 5}, "query must be a string, got 5 (see the tool's input schema)."),
    ("search", {"query": "x", "top_k": 0}, "top_k must be 1 or more, got 0 (see"),
    ("search", {"query": "x", "top_k": 100}, "top_k must be 50 or less, got 100 (see"),
    ("search", {"query": "x", "top_k": "many"}, "top_k must be an integer, got 'many' (see"),
    ("search", {"query": "x", "top_k": True}, "top_k must be an integer, got True (see"),
    ("search", {"query": "x", "max_tokens": 10}, "max_tokens must be 200 or more, got 10"),
    ("search", {"query": "x", "one_per_source": "yes"}, "one_per_source must be true or false"),
    ("search", {"query": "x", "match": "most"}, "match must be 'any' or 'all', got 'most'"),
    ("search", {"query": "x", "match": True}, "match must be 'any' or 'all', got True"),
    ("search", {"query": "x", "filter": "kind=guide"}, "filter must be a JSON object"),
    ("search", {"query": "x", "filter": {"kind": {"$regex": "g.*"}}}, "unknown operator '$regex'"),
    ("search", {"query": "x", "filter": {"year": {"$gt": "soon"}}}, "needs a number"),
    ("search", {"top_k": 3}, "search: query is required (see the tool's input schema)."),
    (
        "search",
        {"top_k": 0, "match": "most"},
        "query is required; top_k must be 1 or more, got 0; match must be",
    ),
    ("fetch", {"id": " "}, "id must be a non-empty string: a hit's chunk_id or source"),
    ("fetch", {"id": "overview.md", "context": 21}, "context must be 20 or less, got 21 (see"),
    ("fetch", {"id": "overview.md", "offset": -1}, "offset must be 0 or more, got -1 (see"),
]


@pytest.mark.slow
def test_bad_arguments_are_one_sentence_and_the_server_keeps_running(index: Path) -> None:
    """One server takes every bad call in turn, and answers a good one after each."""

    async def scenario() -> None:
        async with session(server(index)) as client:
            for tool, arguments, message in BAD_CALLS:
                result = await client.call_tool(tool, arguments)
                assert result.is_error is True, arguments
                text = result.content[0].text
                assert message in text, (arguments, text)
                assert "\n" not in text and "pydantic" not in text, (arguments, text)
                after = await client.call_tool("search", {"query": "E1234"})
                assert after.is_error is False, arguments

    anyio.run(scenario)


@pytest.mark.slow
def test_a_megabyte_query_is_a_one_line_tool_error_in_milliseconds(index: Path) -> None:
    """The query cap (``inputs.parsed_query``) holds over stdio as over HTTP: refused before
    any search work, where a search of it took 1.6 s."""
    query = "".join(random.Random(1).choices("abc 北京é\n", k=1_000_000))

    async def scenario() -> None:
        async with session(server(index)) as client:
            await client.call_tool("search", {"query": "E1234"})  # the model is loaded
            started = time.monotonic()
            result = await client.call_tool("search", {"query": query})
            assert time.monotonic() - started < 0.5
            assert result.is_error is True
            assert result.content[0].text == (
                "Error executing tool search: the query has 1,000,000 characters, more than the"
                " 10,000 allowed (DUCKDB_VECTORS_MAX_QUERY_CHARS): ask a shorter question"
            )

    anyio.run(scenario)


@pytest.mark.slow
def test_concurrent_calls_and_two_servers_on_one_file(index: Path) -> None:
    expected = ["errors", "retries", "db"]
    answers: list[list[str]] = []

    async def client_calls() -> None:
        async with session(server(index)) as client:

            async def one(name: str, arguments: dict[str, Any]) -> None:
                result = await client.call_tool(name, arguments)
                assert result.is_error is False
                if name == "search":
                    answers.append([r["chunk_id"] for r in result.structured_content["results"]])

            async with anyio.create_task_group() as group:
                for _ in range(6):
                    group.start_soon(one, "search", {"query": "E1234 error", "top_k": 3})
                    group.start_soon(one, "report", {})

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(client_calls)
            group.start_soon(client_calls)

    anyio.run(scenario)
    assert len(answers) == 12 and all(answer == expected for answer in answers)


@pytest.mark.slow
def test_read_only_from_the_environment_follows_the_settings_rule(index: Path) -> None:
    """DUCKDB_VECTORS_READ_ONLY=on means read-only for `mcp` as for every other entry point,
    so two servers share the file (read-write, the second would find it locked)."""

    opened: list[int] = []
    both_open = anyio.Event()

    async def client_reports() -> None:
        async with session(server(index, DUCKDB_VECTORS_READ_ONLY="on")) as client:
            assert (await client.call_tool("report", {})).is_error is False
            opened.append(1)
            if len(opened) == 2:
                both_open.set()
            with anyio.fail_after(60):
                await both_open.wait()  # both servers hold the file at once, however slow

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(client_reports)
            group.start_soon(client_reports)

    anyio.run(scenario)


@pytest.mark.slow
def test_a_missing_model_is_a_tool_error_not_a_crash(index: Path, tmp_path: Path) -> None:
    async def scenario() -> None:
        parameters = server(index, DUCKDB_VECTORS_MODEL_PATH=str(tmp_path / "no-model"))
        async with session(parameters) as client:
            result = await client.call_tool("search", {"query": "retries"})
            assert result.is_error and "could not be loaded" in result.content[0].text
            report = await client.call_tool("report", {})  # needs no model
            assert report.is_error is False

    anyio.run(scenario)


@pytest.mark.slow
def test_stdout_carries_only_json_rpc(index: Path) -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "E1234"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": ""}},
        },
    ]
    environment = {**os.environ, **server(index).env}
    process = subprocess.Popen(
        [SCRIPT, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment
    )
    try:
        for message in messages:
            process.stdin.write(json.dumps(message) + "\n")
        process.stdin.flush()
        lines = [process.stdout.readline() for _ in range(3)]  # stdin stays open meanwhile
    finally:
        process.stdin.close()
        rest = process.stdout.read()
        process.wait(timeout=30)
    replies = {reply["id"]: reply for reply in map(json.loads, lines)}
    assert set(replies) == {1, 2, 3} and rest.strip() == ""
    assert replies[2]["result"]["structuredContent"]["results"][0]["chunk_id"] == "errors"
    assert replies[3]["result"]["isError"] is True


@pytest.mark.slow
def test_a_missing_index_fails_at_start_with_one_line(tmp_path: Path) -> None:
    completed = subprocess.run(
        [SCRIPT, "mcp", "--db", str(tmp_path / "missing.duckdb")],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 1 and completed.stdout == ""
    assert completed.stderr.strip().splitlines() == [
        f"Error: {tmp_path / 'missing.duckdb'} does not exist; build an index first"
        " (duckdb-vectors index)"
    ]


@pytest.fixture(scope="module")
def docs_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's example docs (documents of several chunks), with URLs to cite."""
    path = tmp_path_factory.mktemp("mcp-docs") / "docs.duckdb"
    with VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, EXAMPLE_DOCS, urls=UrlRule("https://docs.example.com/"))
    return path


@pytest.mark.slow
def test_search_hits_carry_a_uri_and_a_url_and_one_per_source_keeps_documents_distinct(
    docs_index: Path,
) -> None:
    async def scenario() -> None:
        async with session(server(docs_index)) as client:
            query = {"query": "search results retries agents", "top_k": 4}
            every = await client.call_tool("search", {**query, "one_per_source": False})
            sources = [hit["source"] for hit in every.structured_content["results"]]
            assert len(set(sources)) < len(sources)  # some document answers twice
            distinct = await client.call_tool("search", query)  # one per page by default
            hits = distinct.structured_content["results"]
            assert len({hit["source"] for hit in hits}) == len(hits) == 4
            first = hits[0]
            assert first["uri"] == f"duckdb-vectors://doc/{first['source']}"
            page = first["source"].removesuffix(".md")
            assert first["url"] == f"https://docs.example.com/{page}.html"
            assert first["url"] in distinct.content[0].text
            # A client that shows only text (Docker Agent joins a result's text blocks with no
            # separator) gets one block: each hit whole, with its URL and the id to fetch.
            assert len(distinct.content) == 1
            blocks = distinct.content[0].text.split("\n\n")
            assert len(blocks) == len(hits)
            for block, hit in zip(blocks, hits, strict=True):
                assert block.startswith(f"{hit['rank']}. [")
                assert hit["url"] in block and f"chunk_id: {hit['chunk_id']}" in block

    anyio.run(scenario)


@pytest.mark.slow
def test_max_tokens_cuts_at_a_hit_and_names_what_it_left_out(docs_index: Path) -> None:
    async def scenario() -> None:
        async with session(server(docs_index)) as client:
            everything = await client.call_tool("search", {"query": "index search", "top_k": 9})
            all_ids = [hit["chunk_id"] for hit in everything.structured_content["results"]]
            cut = await client.call_tool(
                "search", {"query": "index search", "top_k": 9, "max_tokens": 400}
            )
            answer = cut.structured_content
            kept = [hit["chunk_id"] for hit in answer["results"]]
            assert kept + answer["left_out"] == all_ids and answer["left_out"]
            assert len(json.dumps(answer, separators=(",", ":"))) <= 4 * 400
            assert "more hits were left out" in cut.content[0].text
            assert all(chunk_id in cut.content[0].text for chunk_id in answer["left_out"])

    anyio.run(scenario)


@pytest.mark.slow
def test_fetch_a_document_a_chunk_in_context_and_page_through(docs_index: Path) -> None:
    async def scenario() -> None:
        async with session(server(docs_index)) as client:
            document = await client.call_tool("fetch", {"id": "guides/searching.md"})
            whole = document.structured_content
            assert whole["kind"] == "document" and whole["next_offset"] is None
            assert whole["chunk_ids"] == ["guides/searching.md#0", "guides/searching.md#1"]
            text = document.content[0].text
            assert text.startswith("# guides/searching.md\n\n## Searching > From the command line")
            assert text.index("From the command line") < text.index("Retries and timeouts")
            assert text.endswith("\n\n[Cite: https://docs.example.com/guides/searching.html]")

            alone = await client.call_tool("fetch", {"id": "guides/searching.md#1"})
            assert alone.structured_content["chunk_ids"] == ["guides/searching.md#1"]
            around = await client.call_tool("fetch", {"id": "guides/searching.md#1", "context": 1})
            assert around.structured_content["chunk_ids"] == whole["chunk_ids"]

            pages, offset = [], 0
            while offset is not None:
                arguments = {"id": "overview.md", "max_tokens": 200, "offset": offset}
                page = (await client.call_tool("fetch", arguments)).structured_content
                pages.append(page["text"])
                offset = page["next_offset"]
            assert (
                len(pages) > 1
                and "".join(pages)
                == (await client.call_tool("fetch", {"id": "overview.md"})).structured_content[
                    "text"
                ]
            )

            unknown = await client.call_tool("fetch", {"id": "guides/missing.md"})
            assert unknown.is_error is True
            assert "no chunk or document 'guides/missing.md'" in unknown.content[0].text
            assert "search first" in unknown.content[0].text

    anyio.run(scenario)


@pytest.mark.slow
def test_documents_and_the_report_are_resources(docs_index: Path) -> None:
    async def scenario() -> None:
        async with session(server(docs_index)) as client:
            listed = await client.list_resources()
            uris = [resource.uri for resource in listed.resources]
            assert uris[0] == "duckdb-vectors://report"
            assert "duckdb-vectors://doc/guides/searching.md" in uris
            assert listed.next_cursor is None  # four documents: one page
            templates = (await client.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["duckdb-vectors://doc/{+source}"]
            document = await client.read_resource("duckdb-vectors://doc/guides/searching.md")
            assert "Retries and timeouts" in document.contents[0].text
            report = json.loads(
                (await client.read_resource("duckdb-vectors://report")).contents[0].text
            )
            assert report["sources"]["guides/searching.md"] == 2

    anyio.run(scenario)


@pytest.mark.slow
def test_resources_list_is_paginated(tmp_path: Path) -> None:
    path = tmp_path / "many.duckdb"
    with VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        count = RESOURCES_PAGE + 30
        store.add_texts(
            [f"note {i}" for i in range(count)], sources=[f"notes/{i:04d}.md" for i in range(count)]
        )

    async def scenario() -> None:
        async with session(server(path)) as client:
            uris, cursor, pages = [], None, 0
            while True:
                listed = await client.list_resources(cursor=cursor)
                uris += [resource.uri for resource in listed.resources]
                pages += 1
                cursor = listed.next_cursor
                if cursor is None:
                    break
            assert pages == 2 and len(uris) == len(set(uris)) == count + 1

    anyio.run(scenario)


# Records, as the real server starts its load, whether the MCP SDK was imported yet and how
# many requests had been answered; the first argument is the CPUs the process may run on.
LOAD_START = """
import os, sys
os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[: int(sys.argv[1])]))
from duckdb_vectors.serve import warming
from duckdb_vectors.cli import main

start = warming.BackgroundWarmUp.start
def recorded_start(self):
    if not self._started.locked():
        print("sdk imported when the load started:", "mcp" in sys.modules, file=sys.stderr)
    return start(self)
warming.BackgroundWarmUp.start = recorded_start
sys.argv = ["duckdb-vectors", "mcp"]
main()
"""


@pytest.mark.slow
@pytest.mark.skipif(available_cpus() < 2, reason="needs two CPUs, to give one up")
@pytest.mark.parametrize(("cpus", "early"), [(2, True), (1, False)], ids=["two-cpus", "one-cpu"])
def test_the_load_overlaps_the_sdk_import_only_with_a_cpu_to_spare(
    index: Path, cpus: int, early: bool
) -> None:
    """With two CPUs the load starts before the SDK's import, which overlaps it; with one
    (docker run --cpus 1, as the Docker MCP Gateway runs a server) it would only delay the
    handshake, so it starts once the first answer is out. Either way the search answers."""
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-c", LOAD_START, str(cpus)],
        env={**os.environ, **server(index).env},
    )

    async def scenario(stderr: TextIO) -> None:
        transport = stdio_client(parameters, errlog=stderr)
        async with Client(transport, mode="legacy", read_timeout_seconds=60) as client:
            result = await client.call_tool("search", {"query": "E1234"})
            assert result.structured_content["results"][0]["chunk_id"] == "errors"

    with tempfile.TemporaryFile("w+") as stderr:
        anyio.run(scenario, stderr)
        stderr.seek(0)
        lines = stderr.read().splitlines()
    assert lines.count(f"sdk imported when the load started: {not early}") == 1, lines


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_an_immutable_index_advertises_no_change_notifications(index: Path, mode: str) -> None:
    """Nothing in a served index changes under a client: neither era's capabilities offer
    list-changed notifications or resource subscriptions, and subscriptions/listen is not
    served."""

    async def scenario() -> None:
        async with Client(server(index), mode=mode, read_timeout_seconds=60) as client:
            capabilities = client.server_capabilities.model_dump(exclude_none=True)
            assert {"tools", "resources"} <= set(capabilities)
            offered = {
                (kind, flag)
                for kind, flags in capabilities.items()
                if isinstance(flags, dict)
                for flag, value in flags.items()
                if value is True
            }
            assert offered == set(), offered

    anyio.run(scenario)
