"""examples/ray_embed_to_parquet.py, run as a user runs it: a process of its own in the venv
`make ray` makes (.venv-ray), joining a one-node Ray cluster that the test starts and stops.
The Parquet it writes, imported with `index --from-parquet`, is the index `index FOLDER` makes
of the same folder: the same chunks, and the same vectors (cosine >= 0.9999)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import DEFAULT_BACKEND, EVALDATA, REPOSITORY, STATIC_MODEL, free_port, run_cli

from duckdb_vectors import Chunk, VectorStore

RAY_VENV = REPOSITORY / ".venv-ray" / "bin"
EXAMPLE = REPOSITORY / "examples" / "ray_embed_to_parquet.py"
# A real docs tree: Markdown, reST, Python, YAML and text files, links between its pages
# (`index` rewrites them), and a page with no text (skipped).
DOCS = EVALDATA / "docsqa" / "ray" / "docs" / "doc" / "source" / "ray-overview"
STARTUP_SECONDS = 120
# How long the cluster gets to stop on Ctrl-C before what is left of it is killed, and how long
# a killed process may take to be gone: seconds on a loaded machine.
STOP_SECONDS = 15
EXIT_SECONDS = 30


@pytest.fixture(scope="module")
def ray_venv() -> Path:
    """The venv with Ray: in CI a failure saying what is missing (it must run there),
    elsewhere a skip saying so."""
    if (RAY_VENV / "ray").is_file():
        return RAY_VENV
    problem = "Ray is not installed: run make ray"
    if os.environ.get("CI"):
        pytest.fail(problem, pytrace=False)
    pytest.skip(problem)


@pytest.fixture
def ray_cluster(ray_venv: Path) -> Iterator[dict[str, str]]:
    """A one-node Ray cluster with 2 CPUs; yields the environment that makes a process join
    it. Its files live in a folder of its own, removed after; every process it started is
    stopped after the test, also when the test fails, and the test fails if one outlives that."""
    # Not under tmp_path: Ray's Unix sockets lie a session folder below it, and a socket's
    # path must stay under 108 bytes.
    folder = Path(tempfile.mkdtemp(prefix="ray-"))
    port = free_port()
    environment = {
        **os.environ,
        # Token authentication, as Ray sets up by default, with the token given here rather
        # than one Ray would write to ~/.ray.
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(16),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    start = [
        str(ray_venv / "ray"), "start", "--head", "--block", "--num-cpus=2",
        f"--port={port}", f"--dashboard-port={free_port()}",
        f"--dashboard-agent-listen-port={free_port()}", "--include-dashboard=false",
        "--disable-usage-stats", f"--temp-dir={folder}",
    ]  # fmt: skip
    log = folder / "ray-start.log"
    with log.open("w") as output:
        # A session of its own: every process of the cluster, actors included, is in it.
        head = subprocess.Popen(
            start, env=environment, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        _wait_until_started(head, folder, log)
        yield {**environment, "RAY_ADDRESS": f"127.0.0.1:{port}"}
    finally:
        left = _stop(head)
        shutil.rmtree(folder, ignore_errors=True)
    assert not left, f"Ray processes outlived SIGKILL: {left}"


def _wait_until_started(head: subprocess.Popen, folder: Path, log: Path) -> None:
    """`ray start` writes the cluster's address to its folder once the cluster is up."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while not (folder / "ray_current_cluster").is_file():
        if head.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"the Ray cluster did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


def _stop(head: subprocess.Popen) -> list[int]:
    """Stop the cluster as Ctrl-C stops `ray start --block` (it stops what it started), then
    kill whatever of its session is still there: under load Ray's own stop can take minutes,
    which only lengthens the suite (its files are in the test's folder, removed after). The
    processes that outlived the kill."""
    if head.poll() is None:
        head.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(timeout=STOP_SECONDS)
    for pid in _in_session(head.pid):
        with contextlib.suppress(ProcessLookupError):  # exited meanwhile
            os.kill(pid, signal.SIGKILL)
    head.wait()
    left = _in_session(head.pid)
    deadline = time.monotonic() + EXIT_SECONDS
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = _in_session(head.pid)
    return left


def _in_session(session: int) -> list[int]:
    """The live processes of a session (Linux: the fourth field after the name in
    /proc/PID/stat); zombies are left for their parents to reap."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited while listed
        if int(fields[3]) == session and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def chunks_of(index: Path) -> dict[str, Chunk]:
    with VectorStore(index, read_only=True) as store:
        page = store.list_vectors(limit=10_000, return_data=True)
    assert page.next_token is None
    return {chunk.chunk_id: chunk for chunk in page}


@pytest.mark.slow
def test_the_ray_example_writes_the_index_that_index_folder_makes(
    ray_cluster: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "embedded"
    embed = [
        str(RAY_VENV / "python"), str(EXAMPLE), str(DOCS), str(out),
        "--backend", DEFAULT_BACKEND, "--model-path", str(STATIC_MODEL),
    ]  # fmt: skip
    done = subprocess.run(embed, env=ray_cluster, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-5000:]
    assert f"under {out}" in done.stdout

    from_ray, from_index = tmp_path / "ray.duckdb", tmp_path / "index.duckdb"
    model = ["--backend", DEFAULT_BACKEND, "--model-path", str(STATIC_MODEL)]
    imported = run_cli("index", "--from-parquet", f"{out}/*.parquet", "--db", str(from_ray), *model)
    assert imported.exit_code == 0, imported.output
    indexed = run_cli("index", str(DOCS), "--db", str(from_index), *model)
    assert indexed.exit_code == 0, indexed.output

    ray, index = chunks_of(from_ray), chunks_of(from_index)
    assert sorted(ray) == sorted(index)
    assert {chunk.source for chunk in index.values()} >= {"index.md", "examples.rst"}
    assert any(chunk.source.endswith(".py") for chunk in index.values())
    fields = ("text", "title", "source", "position", "metadata")
    for chunk_id, chunk in index.items():
        assert [getattr(ray[chunk_id], name) for name in fields] == [
            getattr(chunk, name) for name in fields
        ], chunk_id
    ids = sorted(index)
    a = np.array([ray[chunk_id].embedding for chunk_id in ids])
    b = np.array([index[chunk_id].embedding for chunk_id in ids])
    cosines = (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cosines.min() >= 0.9999, dict(zip(ids, cosines, strict=True))
    # The page `index` skips for having no text is reported from the Ray worker too.
    assert "doc_test/README.md: skipped: no text to index" in done.stderr
