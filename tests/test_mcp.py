"""The MCP server, spawned as ``duckdb-vectors mcp`` and driven by the mcp SDK's stdio client."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import DEFAULT_BACKEND, SCRIPT, STATIC_MODEL
from mcp import Client, StdioServerParameters

from duckdb_vectors import VectorStore


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
            assert "search" in (client.instructions or "")
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == {"search", "report"}
            for tool in tools.values():
                assert tool.annotations.read_only_hint is True
                assert tool.annotations.destructive_hint is False
                assert tool.output_schema["type"] == "object"
            properties = tools["search"].input_schema["properties"]
            assert set(properties) == {"query", "top_k", "filter"}
            assert tools["search"].input_schema["required"] == ["query"]
            assert properties["top_k"]["maximum"] == 50
            assert "results" in tools["search"].output_schema["properties"]
            assert "chunk_count" in tools["report"].output_schema["properties"]

    anyio.run(scenario)


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

    anyio.run(scenario)


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


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"query": "  "}, "query must be a non-empty string"),
        ({"query": "x", "top_k": 0}, "greater than or equal to 1"),
        ({"query": "x", "top_k": 1000}, "less than or equal to 50"),
        ({"query": "x", "filter": {"kind": {"$regex": "g.*"}}}, "unknown operator '$regex'"),
        ({"query": "x", "filter": {"year": {"$gt": "soon"}}}, "needs a number"),
        ({"top_k": 3}, "query"),
    ],
)
def test_bad_arguments_are_tool_errors_and_the_server_keeps_running(index, arguments, message):
    async def scenario() -> None:
        async with session(server(index)) as client:
            result = await client.call_tool("search", arguments)
            assert result.is_error is True
            assert message in result.content[0].text
            after = await client.call_tool("search", {"query": "E1234"})
            assert after.is_error is False

    anyio.run(scenario)


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


def test_a_missing_model_is_a_tool_error_not_a_crash(index: Path, tmp_path: Path) -> None:
    async def scenario() -> None:
        parameters = server(index, DUCKDB_VECTORS_MODEL_PATH=str(tmp_path / "no-model"))
        async with session(parameters) as client:
            result = await client.call_tool("search", {"query": "retries"})
            assert result.is_error and "could not be loaded" in result.content[0].text
            report = await client.call_tool("report", {})  # needs no model
            assert report.is_error is False

    anyio.run(scenario)


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
