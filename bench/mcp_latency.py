"""MCP and CLI latency: spawn to initialize, to tools/list, to the first search; warm search
over stdio against the same query in-process; one-shot CLI search. Optionally the same for a
container image (``docker run -i``) and its cold ``docker run ... search``.

Each MCP session is a fresh server process driven by the MCP SDK's client (``--runs`` of them);
the warm search is the median of ``--warm-calls`` calls in each session. The one-shot CLI
searches are fresh processes (common.run). With ``--baseline`` (another checkout, with its
``.venv``) the two versions' sessions and searches take turns on one index, built by the
baseline so that both can read it.

    python bench/mcp_latency.py                      # local, on the DuckDB docs
    python bench/mcp_latency.py --db docs.duckdb     # an index already built
    python bench/mcp_latency.py --baseline /work/baseline --runs 7   # two versions, in turns
    python bench/mcp_latency.py --image duckdb-vectors-docs

Writes bench/out/mcp_latency.json (or ``--out``) and prints JSON (medians of --runs).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
from common import (
    DOCS,
    MODEL,
    OUT,
    QUERIES,
    SCRIPT,
    Run,
    alternate,
    latencies,
    machine,
    median,
    run,
    tree_python,
    write_json,
)
from mcp import Client, StdioServerParameters

from duckdb_vectors import VectorStore


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
        "warm_search_ms": median(warm) * 1000,
    }


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: median(one[key] for one in runs) for key in runs[0]}


def in_process_ms(db: Path, warm_calls: int) -> float:
    with VectorStore(db, model_path=MODEL, read_only=True) as store:
        store.warm_up()
        timing = latencies(lambda i: store.query(QUERIES[i % len(QUERIES)], 5), warm_calls)
    return timing["p50_ms"]


def command_seconds(command: list[str], runs: int) -> float:
    return median(run(command).seconds for _ in range(runs))


def local_server(script: str, db: Path) -> StdioServerParameters:
    environment = {
        "DUCKDB_VECTORS_DB_PATH": str(db),
        "DUCKDB_VECTORS_MODEL_PATH": str(MODEL),
        "HF_HUB_OFFLINE": "1",
    }
    return StdioServerParameters(command=script, args=["mcp"], env=environment)


def session(server: StdioServerParameters, warm_calls: int) -> Run:
    timings = anyio.run(session_timings, server, warm_calls)
    return Run(timings["first_search_s"], 0.0, 0.0, "", "", result=timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="sessions (and CLI runs) of each")
    parser.add_argument("--warm-calls", type=int, default=50)
    parser.add_argument("--baseline", type=Path, help="another checkout, with its .venv")
    parser.add_argument("--image", help="also measure this runtime image")
    parser.add_argument("--db", type=Path, help="an existing index (default: index the docs)")
    parser.add_argument("--out", type=Path, default=OUT / "mcp_latency.json")
    arguments = parser.parse_args()
    scripts = {"this": SCRIPT}
    if arguments.baseline:
        tree_python(arguments.baseline)
        scripts["baseline"] = str(arguments.baseline / ".venv" / "bin" / "duckdb-vectors")
    results: dict[str, object] = machine()
    with tempfile.TemporaryDirectory() as scratch:
        db = arguments.db or Path(scratch) / "docs.duckdb"
        if arguments.db is None:  # by the oldest version compared, so that all can read it
            oldest = scripts.get("baseline", SCRIPT)
            run([oldest, "index", DOCS, "--db", db, "--model-path", MODEL, "--no-progress"])
        contenders: dict[str, Callable[[], Run]] = {}
        for label, script in scripts.items():
            server = local_server(script, db)
            contenders[f"{label}: mcp stdio"] = lambda server=server: session(
                server, arguments.warm_calls
            )
            search = [script, "search", QUERIES[1], "--db", db, "--model-path", MODEL]
            contenders[f"{label}: cli one-shot search"] = lambda search=search: run(search)
        runs = alternate(contenders, arguments.runs, log=print)
        for label in scripts:
            results[f"{label}: mcp stdio (local process)"] = median_of(
                [done.result for done in runs[f"{label}: mcp stdio"]]
            )
            results[f"{label}: cli one-shot search s"] = median(
                done.seconds for done in runs[f"{label}: cli one-shot search"]
            )
        results["this: in-process query ms"] = in_process_ms(db, arguments.warm_calls)
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
    write_json(arguments.out, results)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
