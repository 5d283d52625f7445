"""``duckdb-vectors mcp --transport http``, driven by the mcp SDK's streamable HTTP client."""

from __future__ import annotations

import json
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import httpx2
import pytest
from conftest import DEFAULT_BACKEND, STATIC_MODEL, get, http_server
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from duckdb_vectors import UrlRule, VectorStore, index_folder

EXAMPLE_DOCS = Path(__file__).resolve().parent.parent / "examples" / "docs"
TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp-http") / "docs.duckdb"
    with VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, EXAMPLE_DOCS, urls=UrlRule("https://docs.example.com/"))
    return path


def post(url: str, headers: dict[str, str]) -> tuple[int, dict]:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    request = urllib.request.Request(
        url,
        data=json.dumps(message).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def client(base: str, headers: dict[str, str] | None = None) -> Client:
    http = httpx2.AsyncClient(headers=headers or {}, timeout=60)
    return Client(streamable_http_client(f"{base}/mcp", http_client=http), mode="legacy")


def test_tools_resources_search_and_fetch_over_http(index: Path) -> None:
    with http_server(index) as (base, _):
        status, health = get(f"{base}/health")
        assert status == 200 and health["status"] == "ready" and health["chunks"] == 9

        async def scenario() -> None:
            async with client(base) as session:
                tools = {tool.name for tool in (await session.list_tools()).tools}
                assert tools == {"search", "fetch", "report"}
                resources = [r.uri for r in (await session.list_resources()).resources]
                assert "duckdb-vectors://doc/guides/searching.md" in resources
                arguments = {"query": "retries", "one_per_source": True, "max_tokens": 2000}
                found = await session.call_tool("search", arguments)
                hits = found.structured_content["results"]
                assert hits[0]["source"] == "guides/searching.md"
                assert hits[0]["url"] == "https://docs.example.com/guides/searching.html"
                assert len({hit["source"] for hit in hits}) == len(hits)
                fetched = await session.call_tool(
                    "fetch", {"id": hits[0]["chunk_id"], "context": 1}
                )
                assert "Retries and timeouts" in fetched.content[0].text
                unknown = await session.call_tool("fetch", {"id": "nowhere.md"})
                assert unknown.is_error and "search first" in unknown.content[0].text

        anyio.run(scenario)


@pytest.mark.slow
def test_sixteen_clients_at_once_share_one_model_and_index(index: Path) -> None:
    answers: list[list[str]] = []

    async def one_client(base: str) -> None:
        async with client(base) as session:
            for _ in range(3):
                result = await session.call_tool("search", {"query": "E408 error", "top_k": 2})
                assert result.is_error is False
                answers.append([hit["chunk_id"] for hit in result.structured_content["results"]])

    with http_server(index) as (base, _):

        async def scenario() -> None:
            async with anyio.create_task_group() as group:
                for _ in range(16):
                    group.start_soon(one_client, base)

        anyio.run(scenario)
    assert len(answers) == 48 and all(answer == answers[0] for answer in answers)
    assert answers[0][0] == "guides/searching.md#1"


@pytest.mark.slow
def test_a_foreign_origin_is_refused_and_a_local_one_served(index: Path) -> None:
    with http_server(index) as (base, _):
        refused = post(f"{base}/mcp", {"Origin": "https://evil.example"})
        assert refused == (403, {"error": "origin https://evil.example is not allowed"})
        served = post(f"{base}/mcp", {"Origin": "http://localhost:3000"})
        assert served[0] != 403


@pytest.mark.slow
def test_get_on_mcp_is_answered_at_once_not_held_open(index: Path) -> None:
    """A stateless server has no stream to send: GET /mcp (a probe, a misconfigured client)
    gets 405 at once, with or without Accept: text/event-stream."""
    with http_server(index) as (base, _):
        for accept in ("*/*", "text/event-stream"):
            started = time.monotonic()
            answer = httpx2.get(f"{base}/mcp", headers={"Accept": accept}, timeout=5)
            assert time.monotonic() - started < 2
            assert answer.status_code == 405 and answer.headers["allow"] == "POST"
            assert "POST requests to /mcp" in answer.json()["error"]


@pytest.mark.slow
def test_a_bearer_token_guards_mcp_but_not_health(index: Path) -> None:
    with http_server(index, "--auth-token", TOKEN) as (base, _):
        assert post(f"{base}/mcp", {})[0] == 401
        assert post(f"{base}/mcp", {"Authorization": "Bearer wrong"})[0] == 401
        assert get(f"{base}/health")[0] == 200

        async def scenario() -> None:
            async with client(base, {"Authorization": f"Bearer {TOKEN}"}) as session:
                result = await session.call_tool("report", {})
                assert result.structured_content["chunk_count"] == 9

        anyio.run(scenario)


@pytest.mark.slow
def test_sigterm_stops_the_server_cleanly(index: Path) -> None:
    with http_server(index) as (base, process):
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        assert "Traceback" not in process.stderr.read()
        assert get(f"{base}/health")[0] == 0  # nothing listens any more


@pytest.mark.slow
def test_a_non_local_bind_without_a_token_warns(index: Path) -> None:
    with http_server(index, "--host", "0.0.0.0") as (_, process):
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        assert "without --auth-token: anyone who reaches port" in process.stderr.read()
