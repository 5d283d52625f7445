"""Cold start of a baked image, as the Docker MCP Gateway runs it: one CPU, no network.

The gateway starts a container per tool call (`docker run -i --init --cpus 1 --memory 2g
--network none IMAGE`, no command: MCP over stdio). Measured from the spawn of `docker run`, by
the MCP SDK's client: when the `initialize` answer arrives, and when the first `tools/call
search` answer does (sent as soon as `initialize` is answered, as a client does). The baseline
is an empty container of the same image on the same engine (`--entrypoint true`, spawn to exit),
so the engine's own start-up can be subtracted. Where the engine runs on this machine, the CPU
seconds the container had used by each answer are read from its cgroup too: on a busy machine
wall times under a one-CPU quota swing by seconds, CPU time hardly. The images and the baseline
take turns (common.alternate); medians are reported.

    eval "$(bash docker/engine-env.sh ../shared)"
    python bench/cold_start.py --runs 9
    git archive main | tar -x -C /tmp/base          # another version to compare
    python bench/cold_start.py --runs 9 --before /tmp/base
    python bench/cold_start.py --image new-image --before-image old-image --floor

Images are baked from examples/docs with the static model (DUCKDB_VECTORS_MODEL_PATH) and
removed afterwards unless --keep; `--image` reuses one instead. `--floor` also times a server of
the SDK alone (one trivial tool) with the image's Python and packages: what no server built on
the official SDK can go below. Writes bench/out/cold_start.json (or ``--out``) and prints JSON.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from common import HERE, MODEL, OUT, Run, alternate, machine, median, run, write_json
from mcp import Client, StdioServerParameters

DOCS = HERE.parent / "examples" / "docs"
TAG = "duckdb-vectors-bench-cold"
# What the gateway gives a server container (docker/mcp-gateway, pkg/docker: --init, one CPU,
# 2 GB) plus no network, as a catalog entry of a baked image asks.
GATEWAY_RUN = ["run", "-i", "--init", "--cpus", "1", "--memory", "2g", "--network", "none"]
QUERY = "which agents can connect?"


def bake(source: Path, tag: str, docs: Path) -> None:
    """Bake ``docs`` into ``tag`` with the package found in ``source`` (its Dockerfiles too)."""
    env = {**os.environ, "PYTHONPATH": str(source), "DUCKDB_VECTORS_MODEL_PATH": str(MODEL)}
    command = [sys.executable, "-m", "duckdb_vectors.cli", "bake", str(docs), "--tag", tag]
    print(f"baking {tag} from {source}", file=sys.stderr)
    run([*command, "--json", "--no-verify"], env=env)


def docker(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *arguments], capture_output=True, text=True)


def mcp_run(image: str, *command: str) -> dict[str, Any]:
    """Seconds from spawn to the ``initialize`` answer and to the first search's answer, and
    the CPU seconds the container had used by each (``command``: an entrypoint and its
    arguments instead of the image's own)."""
    name = f"cold-start-{uuid.uuid4().hex[:8]}"
    entrypoint = ["--entrypoint", command[0], image, *command[1:]] if command else [image]
    with tempfile.TemporaryDirectory() as work:
        cidfile = Path(work) / "cid"
        arguments = [*GATEWAY_RUN, "--rm", "--name", name, "--cidfile", str(cidfile), *entrypoint]
        environment = {k: os.environ[k] for k in ("DOCKER_HOST", "PATH") if k in os.environ}
        server = StdioServerParameters(command="docker", args=arguments, env=environment)
        try:
            return anyio.run(converse, server, cidfile)
        finally:
            docker("rm", "--force", name)


async def converse(server: StdioServerParameters, cidfile: Path) -> dict[str, Any]:
    """Initialize, then search; seconds from the spawn to each answer, and the container's
    CPU seconds then."""
    begin = time.perf_counter()
    async with Client(server, mode="legacy", read_timeout_seconds=120) as client:
        initialized = time.perf_counter() - begin
        usage = cpu_usage_file(cidfile.read_text().strip()) if cidfile.exists() else None
        initialized_cpu = cpu_seconds(usage)
        result = await client.call_tool("search", {"query": QUERY, "top_k": 3})
        searched = time.perf_counter() - begin
        searched_cpu = cpu_seconds(usage)
    if result.is_error:
        raise RuntimeError(f"the search failed: {result.content}")
    return {
        "initialize_s": initialized,
        "first_search_s": searched,
        "initialize_cpu_s": initialized_cpu,
        "first_search_cpu_s": searched_cpu,
    }


# Where a container's CPU time is counted on the host (cgroup v1 of Podman or Docker, v2).
CPU_USAGE_PATTERNS = (
    "/sys/fs/cgroup/cpuacct/**/libpod-{id}/cpuacct.usage",
    "/sys/fs/cgroup/cpuacct/docker/{id}/cpuacct.usage",
    "/sys/fs/cgroup/**/*{id}*/cpu.stat",
)


def cpu_usage_file(container: str) -> Path | None:
    """The host's file counting ``container``'s CPU time, if this process can read it (the
    engine runs on this machine): unlike wall time, it does not grow with the machine's load."""
    for pattern in CPU_USAGE_PATTERNS:
        found = glob.glob(pattern.format(id=container), recursive=True)
        if found:
            return Path(found[0])
    return None


def cpu_seconds(usage: Path | None) -> float | None:
    if usage is None:
        return None
    text = usage.read_text()
    if usage.name == "cpu.stat":  # v2: "usage_usec N" among other lines
        return int(text.split("usage_usec")[1].split()[0]) / 1e6
    return int(text) / 1e9


def empty_run(image: str) -> Run:
    """A container of ``image`` that runs ``true``: spawn to exit."""
    name = f"cold-empty-{uuid.uuid4().hex[:8]}"
    try:
        return run(["docker", *GATEWAY_RUN, "--name", name, "--entrypoint", "true", image])
    finally:
        docker("rm", "--force", name)  # after the clock: the gateway's --rm comes after the answer


# The floor under any server built on the official SDK: MCPServer with one trivial tool,
# run with the image's Python and packages (--floor).
SDK_ONLY_SERVER = """
import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer(name="floor")


@server.tool()
def search(query: str, top_k: int = 5) -> dict[str, list]:
    return {"results": [query]}


anyio.run(server.run_stdio_async)
"""


def summary(runs: list[Run], empty: list[Run]) -> dict[str, Any]:
    timings = [done.result for done in runs]
    baseline = median(done.seconds for done in empty)
    initialize = median(timing["initialize_s"] for timing in timings)
    search = median(timing["first_search_s"] for timing in timings)
    cpu = {
        f"{key}_cpu_s": round(median(timing[f"{key}_cpu_s"] for timing in timings), 3)
        for key in ("initialize", "first_search")
        if all(timing[f"{key}_cpu_s"] is not None for timing in timings)
    }
    return {
        **cpu,
        "empty_container_s": round(baseline, 3),
        "initialize_s": round(initialize, 3),
        "first_search_s": round(search, 3),
        "initialize_over_empty_s": round(initialize - baseline, 3),
        "first_search_over_empty_s": round(search - baseline, 3),
        "runs": timings,
        "empty_runs": [done.seconds for done in empty],
    }


def timed_session(*server: str) -> Run:
    timings = mcp_run(*server)
    return Run(timings["first_search_s"], 0.0, 0.0, "", "", result=timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--docs", type=Path, default=DOCS, help="documents to bake")
    parser.add_argument("--before", type=Path, help="a source tree to bake and compare")
    parser.add_argument("--image", help="measure this image instead of baking this checkout")
    parser.add_argument("--before-image", help="compare with this image instead of baking")
    parser.add_argument("--keep", action="store_true", help="keep the images baked here")
    parser.add_argument(
        "--floor", action="store_true", help="also time an SDK-only server in the same image"
    )
    parser.add_argument("--out", type=Path, default=OUT / "cold_start.json")
    arguments = parser.parse_args()

    images: dict[str, str] = {}
    baked: list[str] = []
    if arguments.before_image:
        images["before"] = arguments.before_image
    elif arguments.before:
        images["before"] = f"{TAG}-before"
        bake(arguments.before.resolve(), images["before"], arguments.docs)
        baked.append(images["before"])
    if arguments.image:
        images["after"] = arguments.image
    else:
        images["after"] = TAG
        bake(HERE.parent, TAG, arguments.docs)
        baked.append(TAG)
    try:
        servers = {label: (image,) for label, image in images.items()}
        if arguments.floor:
            servers["sdk_only"] = (images["after"], "python", "-c", SDK_ONLY_SERVER)
        contenders: dict[str, Callable[[], Run]] = {}
        for label, server in servers.items():
            timed_session(*server)  # a first run of each, not counted: page cache, layers
            contenders[label] = lambda server=server: timed_session(*server)
            contenders[f"{label}, empty"] = lambda image=server[0]: empty_run(image)
        runs = alternate(contenders, arguments.runs, log=print)
        results: dict[str, Any] = machine()
        for label, server in servers.items():
            done = summary(runs[label], runs[f"{label}, empty"])
            results[label] = {"image": server[0], **done}
    finally:
        if not arguments.keep:
            for image in baked:
                docker("rmi", "--force", image)
    write_json(arguments.out, results)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
