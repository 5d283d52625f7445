"""A served index is rebuilt beside itself: readers are never locked out, and a run stopped at
any moment (SIGINT, SIGTERM) leaves the index exactly as it was, and nothing half-made."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import duckdb
import pytest
from conftest import DUCKDB_DOCS, SCRIPT, STATIC_MODEL
from mcp import Client
from test_mcp import server as mcp_stdio
from test_mcp import session
from test_mcp_http import client as http_client
from test_mcp_http import get, http_server

from duckdb_vectors import VectorStore
from duckdb_vectors.serve.mcp_server import build_server

pytestmark = pytest.mark.slow

ENV = {"HF_HUB_OFFLINE": "1", "DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL), "PATH": "/usr/bin"}
QUERY = "aggregate functions"


def cli(*arguments: str) -> subprocess.CompletedProcess:
    assert SCRIPT is not None
    return subprocess.run(
        [SCRIPT, *arguments], env=ENV, capture_output=True, text=True, timeout=300
    )


def copy_docs(target: Path, folders: tuple[str, ...]) -> Path:
    for folder in folders:
        shutil.copytree(DUCKDB_DOCS / folder, target / folder)
    return target


def what_it_answers(db: Path) -> tuple[dict, list[str]]:
    """The index's manifest and the chunk ids of a search."""
    with VectorStore(db, model_path=STATIC_MODEL, read_only=True, memory_index=False) as store:
        assert store.manifest is not None
        hits = store.query(QUERY, top_k=5)
        return store.manifest.model_dump(mode="json"), [hit.chunk.chunk_id for hit in hits]


def rebuild(index: Path, tree: Path) -> subprocess.Popen:
    """Re-index ``index`` from ``tree`` in another language: every phase writes (re-tokenizing,
    chunking, embedding, pruning)."""
    assert SCRIPT is not None
    return subprocess.Popen(
        [SCRIPT, "index", str(tree), "--db", str(index), "--language", "german", "--no-progress"],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """An index of part of the DuckDB docs, a bigger tree to re-index it from, and how long
    that re-index takes when nothing stops it."""
    root = tmp_path_factory.mktemp("rebuild")
    small = copy_docs(root / "small", ("data",))
    big = copy_docs(root / "big", ("data", "sql", "guides"))
    index = root / "served.duckdb"
    built = cli("index", str(small), "--db", str(index), "--no-progress")
    assert built.returncode == 0, built.stderr
    whole = root / "whole.duckdb"
    shutil.copyfile(index, whole)
    started = time.monotonic()
    uninterrupted = rebuild(whole, big)
    _, stderr = uninterrupted.communicate(timeout=300)
    assert uninterrupted.returncode == 0, stderr
    return {"index": index, "big": big, "seconds": time.monotonic() - started}


# When the signal comes, as a share of an uninterrupted run (from its imports to its last
# write), and which: Ctrl-C, or a container being stopped.
MOMENTS = [
    (signal.SIGINT, 0.03),
    (signal.SIGTERM, 0.12),
    (signal.SIGINT, 0.25),
    (signal.SIGTERM, 0.4),
    (signal.SIGINT, 0.55),
    (signal.SIGTERM, 0.7),
    (signal.SIGINT, 0.85),
    (signal.SIGTERM, 0.95),
]


@pytest.mark.parametrize(("stop", "moment"), MOMENTS)
def test_a_run_stopped_at_any_moment_leaves_the_index_as_it_was(
    served: dict, tmp_path: Path, stop: signal.Signals, moment: float
) -> None:
    index = tmp_path / "docs.duckdb"
    shutil.copyfile(served["index"], index)
    before = what_it_answers(index)
    run = rebuild(index, served["big"])
    time.sleep(moment * served["seconds"])
    run.send_signal(stop)
    _, stderr = run.communicate(timeout=120)
    if run.returncode == 0:  # it finished first (the machine sped up): the index is the new one
        assert what_it_answers(index) != before
    elif run.returncode == -stop:  # before Python had even started the command: nothing ran
        assert what_it_answers(index) == before
    else:
        assert run.returncode == 128 + stop, stderr
        assert stderr.splitlines()[-1] == "Interrupted.", stderr
        assert what_it_answers(index) == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["docs.duckdb"]


# The console script, then a signal as the process ends (the moment the timed cases above
# reach only by chance): the command's own handlers are gone, the startup ones are back.
SIGNALLED_AT_EXIT = """
import os, signal, sys, time
from duckdb_vectors import console
sys.argv = ["duckdb-vectors", *sys.argv[1:]]
console.main()
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(1)
"""


def test_a_signal_after_the_new_index_is_in_place_is_not_an_interruption(
    served: dict, tmp_path: Path
) -> None:
    index = tmp_path / "docs.duckdb"
    shutil.copyfile(served["index"], index)
    tree = copy_docs(tmp_path / "tree", ("data/json",))
    arguments = ["index", str(tree), "--db", str(index), "--language", "german", "--no-progress"]
    run = subprocess.run(
        [sys.executable, "-c", SIGNALLED_AT_EXIT, *arguments],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0 and "Interrupted." not in run.stderr, run.stderr
    manifest, _ = what_it_answers(index)
    assert manifest["language"] == "german"


def test_a_run_that_fails_leaves_the_index_and_nothing_else(
    served: dict[str, Path], tmp_path: Path
) -> None:
    index = tmp_path / "docs.duckdb"
    shutil.copyfile(served["index"], index)
    before = what_it_answers(index)
    failed = cli("index", str(served["big"]), "--db", str(index), "--backend", "hashing:64")
    assert failed.returncode == 1 and "built with" in failed.stderr, failed.stderr
    assert str(index) in failed.stderr and "staging" not in failed.stderr
    assert what_it_answers(index) == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["docs.duckdb"]


def sources_of(db: Path) -> set[str]:
    with VectorStore(db, model_path=STATIC_MODEL, read_only=True, memory_index=False) as store:
        return set(store.sources())


def test_searches_go_on_while_the_index_is_rebuilt(served: dict, tmp_path: Path) -> None:
    """A CLI search in a loop, and searches over stdio and HTTP to running servers, while the
    index is rebuilt from another tree: every one answers, from the old index until the new one
    is in place and from the new one after (never from a mix), and the servers take over the
    new index without a restart; /health says which index it serves."""
    index = tmp_path / "live.duckdb"
    shutil.copyfile(served["index"], index)
    old = sources_of(index)
    other = copy_docs(tmp_path / "other", ("guides",))
    new = {path.relative_to(other).as_posix() for path in other.rglob("*.md")}
    with http_server(index) as (base, _):
        old_hash = get(f"{base}/health")[1]["content_hash"]
        seen: dict[str, list[str]] = {"cli": [], "stdio": [], "http": [], "health": []}
        errors: list[str] = []

        def kind(sources: set[str]) -> str:
            assert sources and (sources <= old or sources <= new), sources  # never a mix
            return "old" if sources <= old else "new"

        def cli_searches(until: threading.Event) -> None:
            while not until.is_set() or seen["cli"][-1:] != ["new"]:
                ran = cli("search", QUERY, "--db", str(index), "--json", "--top-k", "5")
                if ran.returncode != 0:
                    errors.append(f"cli: {ran.stderr}")
                    return
                results = json.loads(ran.stdout)["results"]
                seen["cli"].append(kind({hit["source"] for hit in results}))

        async def mcp_searches(name: str, opened: Client, until: anyio.Event) -> None:
            async with opened as session:
                while not until.is_set() or seen[name][-1:] != ["new"]:
                    result = await session.call_tool("search", {"query": QUERY, "top_k": 5})
                    if result.is_error:
                        errors.append(f"{name}: {result.content}")
                        return
                    found = {hit["source"] for hit in result.structured_content["results"]}
                    seen[name].append(kind(found))
                    health = get(f"{base}/health")[1].get("content_hash")
                    seen["health"].append("old" if health == old_hash else str(health))
                    await anyio.sleep(0.05)

        async def scenario() -> None:
            rebuilt, finished = anyio.Event(), threading.Event()
            with anyio.fail_after(240):
                async with anyio.create_task_group() as group:
                    group.start_soon(anyio.to_thread.run_sync, cli_searches, finished)
                    group.start_soon(mcp_searches, "stdio", session(mcp_stdio(index)), rebuilt)
                    group.start_soon(mcp_searches, "http", http_client(base), rebuilt)
                    await anyio.sleep(2)  # every loop has answered from the old index
                    ran = await anyio.to_thread.run_sync(
                        lambda: cli("index", str(other), "--db", str(index), "--no-progress")
                    )
                    assert ran.returncode == 0, ran.stderr
                    rebuilt.set()
                    finished.set()

        anyio.run(scenario)
        new_hash = get(f"{base}/health")[1]["content_hash"]
    assert errors == []
    assert new_hash != old_hash and sources_of(index) <= new
    for name in ("cli", "stdio", "http"):
        answers = seen[name]
        assert answers[0] == "old" and answers[-1] == "new", (name, answers)
        assert answers == sorted(answers, key=["old", "new"].index), (name, answers)  # no way back
    assert set(seen["health"]) <= {"old", new_hash}


def test_a_server_swapped_a_broken_file_says_so_and_recovers_with_the_next(
    served: dict, tmp_path: Path
) -> None:
    index, good = tmp_path / "docs.duckdb", tmp_path / "next.duckdb"
    shutil.copyfile(served["index"], index)
    shutil.copyfile(served["index"], good)
    with duckdb.connect(str(tmp_path / "broken.duckdb")) as broken:
        broken.execute("CREATE TABLE nothing_of_an_index (x INTEGER)")
    store = VectorStore(index, model_path=STATIC_MODEL, read_only=True)

    async def scenario() -> None:
        async with Client(build_server(store)) as client:
            assert not (await client.call_tool("search", {"query": QUERY})).is_error
            os.replace(tmp_path / "broken.duckdb", index)
            refused = await client.call_tool("search", {"query": QUERY})
            assert refused.is_error
            assert "the index could not be loaded" in refused.content[0].text
            os.replace(good, index)
            assert not (await client.call_tool("search", {"query": QUERY})).is_error

    anyio.run(scenario)
