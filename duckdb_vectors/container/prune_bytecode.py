"""Trim step: keep compiled bytecode only for the modules serving imports.

The runtime image runs with a read-only root file system, so Python cannot cache bytecode
there: modules it imports need their .pyc built in advance (a faster cold start), and the
.pyc of every other module is dead weight. This loads the serving path (``serving.load``:
what ``search``, ``mcp`` and a runtime append import, and the model), then serves one MCP
session over stdio and runs one ``search`` on the baked index, as the image does, and deletes
the bytecode of everything else. Serving for real matters: the event loop's backend, the
stdio transport and what loading the in-memory index imports are loaded only then, and
compiling them at every start cost a one-CPU container about 0.1 s.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import threading
from importlib.util import cache_from_source
from pathlib import Path

from duckdb_vectors.cli import main
from duckdb_vectors.container import serving

# Where the index stage of Dockerfile.runtime writes the index.
INDEX = "/index/vectors.duckdb"
REQUESTS = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "prune-bytecode", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "index"}},
    },
]


def run_cli(*arguments: str) -> None:
    sys.argv = ["duckdb-vectors", *arguments]
    try:
        main()
    except SystemExit as ended:
        if ended.code:
            raise


def serve_one_session() -> list[dict]:
    """``duckdb-vectors mcp`` in this process, its stdin and stdout pipes to a client thread
    that sends ``REQUESTS`` and closes stdin once answered; the answers."""
    to_server, from_client = os.pipe()
    to_client, from_server = os.pipe()
    saved = os.dup(0), os.dup(1)
    os.dup2(to_server, 0)
    os.dup2(from_server, 1)
    os.close(to_server)
    os.close(from_server)
    answers: list[dict] = []
    client = threading.Thread(target=_converse, args=(from_client, to_client, answers))
    client.start()
    try:
        run_cli("mcp", "--db", INDEX)
    finally:
        os.dup2(saved[0], 0)
        os.dup2(saved[1], 1)  # the server's end closes: the client reads its end to the end
        client.join()
    return answers


def _converse(requests_fd: int, answers_fd: int, answers: list[dict]) -> None:
    with os.fdopen(requests_fd, "wb") as requests, os.fdopen(answers_fd, "rb") as replies:
        for request in REQUESTS:
            requests.write(json.dumps(request).encode() + b"\n")
            requests.flush()
            if "id" in request:
                line = replies.readline()
                if not line:
                    return
                answers.append(json.loads(line))


def prune() -> int:
    """Delete the bytecode of every module this process has not imported; how many kept."""
    keep = {
        Path(cache_from_source(module.__file__)).resolve()
        for module in list(sys.modules.values())
        if getattr(module, "__file__", None) and module.__file__.endswith(".py")
    }
    for root in {Path(p) for p in sys.path if p.endswith("site-packages")}:
        for compiled in root.rglob("*.pyc"):
            if compiled.resolve() not in keep:
                compiled.unlink()
    return len(keep)


if __name__ == "__main__":
    serving.load()
    answers = serve_one_session()
    if [answer.get("id") for answer in answers] != [1, 2] or "error" in answers[-1]:
        raise SystemExit(f"prune_bytecode: the MCP session failed: {answers}")
    with contextlib.redirect_stdout(io.StringIO()):  # the build log needs no hits
        run_cli("search", "index", "--db", INDEX, "--top-k", "1", "--json")
    print(f"kept the bytecode of the {prune()} modules serving imports", file=sys.stderr)
