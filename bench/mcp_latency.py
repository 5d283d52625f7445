"""MCP and CLI latency: spawn to initialize, to tools/list, to the first search; warm search
over stdio versus the same query in-process; one-shot CLI search. Optionally the same for a
container image (``docker run -i``) and its cold ``docker run ... search``.

    python bench/mcp_latency.py                      # local, on the DuckDB docs
    python bench/mcp_latency.py --image duckdb-vectors-docs

Writes bench/out/mcp_latency.json and prints a Markdown table (medians of --runs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import anyio
from common import DOCS, HERE, MODEL, QUERIES, SCRIPT
from mcp import Client, StdioServerParameters

from duckdb_vectors import VectorStore, index_folder


async def session_timings(parameters: StdioServerParameters, warm_calls: int) -> dict[str, float]:
    started = time.perf_counter()
    async with Client(parameters, mode="legacy", read_timeout_seconds=60) as client:
        initialized = time.perf_counter()
        await client.list_tools()
        listed = time.perf_counter()
        await client.call_tool("search", {"query": QUERIES[0]})
        first = time.perf_counter()
        warm = []
        for i in range(warm_calls):
            begin = time.perf_counter()
            await client.call_tool("search", {"query": QUERIES[i % len(QUERIES)]})
            warm.append(time.perf_counter() - begin)
    return {
        "initialize_s": initialized - started,
        "tools_list_s": listed - started,
        "first_search_s": first - started,
        "warm_search_ms": statistics.median(warm) * 1000,
    }


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def in_process_ms(db: Path, warm_calls: int) -> float:
    with VectorStore(db, model_path=MODEL, read_only=True) as store:
        store.warm_up()
        timings = []
        for i in range(warm_calls):
            begin = time.perf_counter()
            store.query(QUERIES[i % len(QUERIES)], 5)
            timings.append(time.perf_counter() - begin)
    return statistics.median(timings) * 1000


def command_seconds(command: list[str], runs: int) -> float:
    timings = []
    for _ in range(runs):
        begin = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        timings.append(time.perf_counter() - begin)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warm-calls", type=int, default=50)
    parser.add_argument("--image", help="also measure this runtime image")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "mcp_latency.json")
    arguments = parser.parse_args()
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "docs.duckdb"
        with VectorStore(db, model_path=MODEL) as store:
            index_folder(store, DOCS)
        environment = {
            "DUCKDB_VECTORS_DB_PATH": str(db),
            "DUCKDB_VECTORS_MODEL_PATH": str(MODEL),
            "HF_HUB_OFFLINE": "1",
        }
        local = StdioServerParameters(command=SCRIPT, args=["mcp"], env=environment)
        runs = [
            anyio.run(session_timings, local, arguments.warm_calls) for _ in range(arguments.runs)
        ]
        results["mcp stdio (local process)"] = median_of(runs)
        results["in-process query ms"] = in_process_ms(db, arguments.warm_calls)
        results["cli one-shot search s"] = command_seconds(
            [SCRIPT, "search", QUERIES[1], "--db", str(db), "--model-path", str(MODEL)],
            arguments.runs,
        )
    if arguments.image:
        container = StdioServerParameters(
            command="docker",
            args=["run", "-i", "--rm", arguments.image, "mcp"],
            env={k: os.environ[k] for k in ("DOCKER_HOST", "PATH") if k in os.environ},
        )
        runs = [
            anyio.run(session_timings, container, arguments.warm_calls)
            for _ in range(arguments.runs)
        ]
        results["mcp over docker run -i"] = median_of(runs)
        results["docker run search s"] = command_seconds(
            ["docker", "run", "--rm", arguments.image, "search", "retries"], arguments.runs
        )
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
