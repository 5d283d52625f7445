"""Cold start of a baked image, as the Docker MCP Gateway runs it: one CPU, no network.

The gateway starts a container per tool call (`docker run -i --init --cpus 1 --memory 2g
--network none IMAGE`, no command: MCP over stdio). Measured from the spawn of `docker run`:
when the `initialize` answer arrives, and when the first `tools/call search` answer does
(sent as soon as `initialize` is answered, as a client does). The baseline is an empty
container of the same image on the same engine (`--entrypoint true`, spawn to exit), so the
engine's own start-up can be subtracted. Where the engine runs on this machine, the CPU
seconds the container had used by each answer are read from its cgroup too: on a busy machine
wall times under a one-CPU quota swing by seconds, CPU time hardly. Runs alternate between
the images and the baseline, so a busy machine's load falls on all alike; medians are
reported.

    eval "$(bash docker/engine-env.sh ../shared)"
    python bench/cold_start.py --runs 9
    git archive main | tar -x -C /tmp/base          # another version to compare
    python bench/cold_start.py --runs 9 --before /tmp/base
    python bench/cold_start.py --image my-docs-search --profile   # an image already baked
    python bench/cold_start.py --image new-image --before-image old-image --floor

Images are baked from examples/docs with the static model (DUCKDB_VECTORS_MODEL_PATH) and
removed afterwards unless --keep; `--image` reuses one instead. `--profile` also runs the
server once under `python -X importtime` inside the container and lists the slowest imports;
`--floor` also times a server of the SDK alone (one trivial tool) with the image's Python and
packages: what no server built on the official SDK can go below.
Prints JSON and writes bench/out/cold_start.json.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import IO, Any

from common import HERE, MODEL, OUT, write_json

DOCS = HERE.parent / "examples" / "docs"
TAG = "duckdb-vectors-bench-cold"
# What the gateway gives a server container (docker/mcp-gateway, pkg/docker: --init, one CPU,
# 2 GB) plus no network, as a catalog entry of a baked image asks.
GATEWAY_RUN = ["run", "-i", "--init", "--cpus", "1", "--memory", "2g", "--network", "none"]
QUERY = "which agents can connect?"
PROTOCOL_VERSION = "2025-11-25"


def bake(source: Path, tag: str, docs: Path) -> None:
    """Bake ``docs`` into ``tag`` with the package found in ``source`` (its Dockerfiles too)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(source),
        "DUCKDB_VECTORS_MODEL_PATH": str(MODEL),
    }
    command = [sys.executable, "-m", "duckdb_vectors.cli", "bake", str(docs), "--tag", tag]
    print(f"baking {tag} from {source}", file=sys.stderr)
    result = subprocess.run(
        [*command, "--json", "--no-verify"], capture_output=True, text=True, env=env
    )
    if result.returncode != 0:
        raise SystemExit(f"bake of {tag} failed:\n{result.stderr[-3000:]}")


def docker(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *arguments], capture_output=True, text=True)


def send(pipe: IO[bytes], message: dict[str, Any]) -> None:
    pipe.write(json.dumps(message).encode() + b"\n")
    pipe.flush()


def answer(pipe: IO[bytes], request_id: int) -> dict[str, Any]:
    """The response to ``request_id`` (notifications and log lines before it are skipped)."""
    while True:
        line = pipe.readline()
        if not line:
            raise RuntimeError(f"the server closed stdout before answering request {request_id}")
        message = json.loads(line)
        if message.get("id") == request_id:
            return message


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "cold-start-bench", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
SEARCH = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "search", "arguments": {"query": QUERY, "top_k": 3}},
}


def mcp_run(image: str, *command: str) -> dict[str, Any]:
    """Seconds from spawn to the ``initialize`` answer and to the first search's answer, and
    the CPU seconds the container had used by each (``command``: an entrypoint and its
    arguments instead of the image's own); the stderr."""
    name = f"cold-start-{uuid.uuid4().hex[:8]}"
    entrypoint = ["--entrypoint", command[0], image, *command[1:]] if command else [image]
    # stderr to a file, not a pipe: -X importtime would fill a pipe nobody reads.
    with tempfile.TemporaryDirectory() as work, (Path(work) / "stderr").open("w+b") as stderr:
        cidfile = Path(work) / "cid"
        begin = time.perf_counter()
        run = [*GATEWAY_RUN, "--rm", "--name", name, "--cidfile", str(cidfile), *entrypoint]
        server = subprocess.Popen(
            ["docker", *run],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        try:
            timings = converse(server, begin, cidfile)
            server.communicate(timeout=60)  # closes stdin: the server ends
        finally:
            if server.poll() is None:
                server.kill()
                docker("rm", "--force", name)
        stderr.seek(0)
        return {**timings, "stderr": stderr.read().decode()}


def converse(server: subprocess.Popen, begin: float, cidfile: Path) -> dict[str, Any]:
    """Initialize, then search; seconds from ``begin`` to each answer, and the container's
    CPU seconds then."""
    assert server.stdin is not None and server.stdout is not None
    send(server.stdin, INITIALIZE)
    answer(server.stdout, 1)
    initialized = time.perf_counter() - begin
    usage = cpu_usage_file(cidfile.read_text().strip())
    initialized_cpu = cpu_seconds(usage)
    send(server.stdin, INITIALIZED)
    send(server.stdin, SEARCH)
    result = answer(server.stdout, 2)["result"]
    searched = time.perf_counter() - begin
    searched_cpu = cpu_seconds(usage)
    if result.get("isError") or not result["structuredContent"]["results"]:
        raise RuntimeError(f"the search failed: {result['content'][0]['text']}")
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


def empty_run(image: str) -> float:
    """Seconds from spawn to exit of a container of ``image`` that runs ``true``."""
    name = f"cold-empty-{uuid.uuid4().hex[:8]}"
    begin = time.perf_counter()
    ran = subprocess.run(
        ["docker", *GATEWAY_RUN, "--name", name, "--entrypoint", "true", image],
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    seconds = time.perf_counter() - begin
    docker("rm", "--force", name)  # after the clock: the gateway's --rm happens after the answer
    if ran.returncode != 0:
        raise SystemExit(f"the empty container of {image} failed: {ran.stderr.decode()[-500:]}")
    return seconds


def importtime(image: str, top: int = 25) -> list[dict[str, Any]]:
    """The slowest top-level imports (cumulative µs) of the server inside ``image``, from its
    start to its answers to ``initialize`` and one search."""
    server = mcp_run(image, "python", "-X", "importtime", "-m", "duckdb_vectors.cli", "mcp")
    rows = []
    for line in server["stderr"].splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _own, cumulative, module = line.removeprefix("import time:").split("|")
        if not module.startswith("  "):  # one space before a top-level module, more if nested
            rows.append({"module": module.strip(), "cumulative_us": int(cumulative)})
    return sorted(rows, key=lambda row: -row["cumulative_us"])[:top]


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


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def summary(runs: list[dict[str, Any]], empty: list[float]) -> dict[str, Any]:
    baseline = statistics.median(empty)
    initialize = statistics.median(run["initialize_s"] for run in runs)
    search = statistics.median(run["first_search_s"] for run in runs)
    cpu = {
        f"{key}_cpu_s": round(statistics.median(run[f"{key}_cpu_s"] for run in runs), 3)
        for key in ("initialize", "first_search")
        if all(run[f"{key}_cpu_s"] is not None for run in runs)
    }
    return {
        **cpu,
        "empty_container_s": round(baseline, 3),
        "initialize_s": round(initialize, 3),
        "first_search_s": round(search, 3),
        "initialize_over_empty_s": round(initialize - baseline, 3),
        "first_search_over_empty_s": round(search - baseline, 3),
        "runs": runs,
        "empty_runs": empty,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--docs", type=Path, default=DOCS, help="documents to bake")
    parser.add_argument("--before", type=Path, help="a source tree to bake and compare")
    parser.add_argument("--image", help="measure this image instead of baking this checkout")
    parser.add_argument("--before-image", help="compare with this image instead of baking")
    parser.add_argument("--keep", action="store_true", help="keep the images baked here")
    parser.add_argument("--profile", action="store_true", help="also list the slowest imports")
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
        results: dict[str, Any] = {"load_average_before": load_average()}
        servers = {label: (image,) for label, image in images.items()}
        if arguments.floor:
            servers["sdk_only"] = (images["after"], "python", "-c", SDK_ONLY_SERVER)
        for server in servers.values():  # a first run of each, not counted: page cache, layers
            mcp_run(*server)
            empty_run(server[0])
        runs: dict[str, list[dict[str, Any]]] = {label: [] for label in servers}
        empty: dict[str, list[float]] = {label: [] for label in servers}
        for _ in range(arguments.runs):
            for label, server in servers.items():
                empty[label].append(empty_run(server[0]))
                run = mcp_run(*server)
                runs[label].append({key: value for key, value in run.items() if key != "stderr"})
        results["load_average_after"] = load_average()
        if arguments.floor:
            results["sdk_only"] = {
                "image": images["after"],
                **summary(runs.pop("sdk_only"), empty.pop("sdk_only")),
            }
        for label, image in images.items():
            results[label] = {"image": image, **summary(runs[label], empty[label])}
            if arguments.profile:
                results[label]["slowest_imports"] = importtime(image)
    finally:
        if not arguments.keep:
            for image in baked:
                docker("rmi", "--force", image)
    write_json(arguments.out, results)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
