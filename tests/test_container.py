"""The bake-then-freeze images, built with the real docker CLI and run like a user would.

The runtime image is built once per session from examples/docs with the local model
(``make image``); every test then runs it. Needs a Docker engine (CI provides Podman's).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import anyio
import pytest
from conftest import REPOSITORY, STATIC_MODEL
from mcp import Client, StdioServerParameters

pytestmark = [pytest.mark.slow, pytest.mark.container]

IMAGE = os.environ.get("DUCKDB_VECTORS_TEST_IMAGE", "duckdb-vectors-test-docs")
BUILDER = f"{IMAGE}-builder"
HARDENED = ["--network", "none", "--read-only", "--user", "65534", "--cap-drop", "ALL"]


def docker(*arguments: str, check: bool = True, timeout: int = 600) -> subprocess.CompletedProcess:
    result = subprocess.run(
        ["docker", *arguments], capture_output=True, text=True, timeout=timeout, cwd=REPOSITORY
    )
    if check and result.returncode != 0:
        raise AssertionError(f"docker {' '.join(arguments)} failed:\n{result.stderr[-3000:]}")
    return result


def shell(image: str, script: str) -> str:
    """Run a shell script inside the image (not its entrypoint); its stdout."""
    return docker("run", "--rm", "--entrypoint", "sh", image, "-c", script).stdout


@pytest.fixture(scope="session")
def image() -> str:
    built = subprocess.run(
        [
            "make",
            "image",
            f"IMAGE={IMAGE}",
            f"BUILDER_IMAGE={BUILDER}",
            "DOCS=examples/docs",
            f"MODEL_PATH={STATIC_MODEL}",
        ],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if built.returncode != 0:
        pytest.fail(f"make image failed:\n{built.stderr[-3000:]}")
    return IMAGE


def test_search_answers_from_the_baked_index(image: str) -> None:
    result = docker("run", "--rm", image, "search", "how are failed requests retried?", "--json")
    payload = json.loads(result.stdout)
    assert payload["results"][0]["source"] == "guides/searching.md"
    assert payload["results"][0]["title"] == "Searching > Retries and timeouts"


def test_hardened_run_with_no_network_and_a_read_only_root(image: str) -> None:
    result = docker("run", "--rm", *HARDENED, image, "search", "E408", "--top-k", "1")
    assert "error code E408" in result.stdout
    assert result.stderr == ""  # no warnings from a read-only file system


def test_labels_carry_the_manifest(image: str) -> None:
    labels = json.loads(docker("inspect", "--format", "{{json .Config.Labels}}", image).stdout)
    manifest = json.loads(docker("run", "--rm", image, "report", "--json").stdout)
    assert labels["io.duckdb-vectors.backend"] == manifest["backend"]
    assert labels["io.duckdb-vectors.dimension"] == "256"
    assert labels["io.duckdb-vectors.chunk-count"] == str(manifest["chunk_count"])
    assert labels["io.duckdb-vectors.content-hash"] == manifest["manifest"]["content_hash"]


def test_the_runtime_image_carries_only_what_serving_needs(image: str) -> None:
    listing = shell(
        image,
        "ls /app; command -v gcc cc pip || true; ls /docs /src 2>&1 || true;"
        " find / -xdev -name '*.duckdb.wal' 2>/dev/null; id -u",
    ).split()
    assert listing[:2] == ["manifest.json", "vectors.duckdb"]
    assert "/usr/bin/gcc" not in listing and not any(p.endswith("/pip") for p in listing)
    assert "10001" in listing  # not root
    assert not any(p.endswith(".wal") for p in listing)


def test_mcp_over_docker_run_i(image: str) -> None:
    parameters = StdioServerParameters(
        command="docker",
        args=["run", "-i", "--rm", *HARDENED, image, "mcp"],
        env={key: os.environ[key] for key in ("DOCKER_HOST", "PATH") if key in os.environ},
    )

    async def scenario() -> None:
        async with Client(parameters, mode="legacy", read_timeout_seconds=60) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert tools == {"search", "report"}
            result = await client.call_tool("search", {"query": "which agents can connect?"})
            assert result.is_error is False
            assert result.structured_content["results"][0]["source"] == "guides/agents.md"

    anyio.run(scenario)


def test_runtime_append_of_a_mounted_registry(image: str) -> None:
    skills = REPOSITORY / "examples" / "skills"
    result = docker(
        "run",
        "--rm",
        *HARDENED,
        "--tmpfs",
        "/tmp",
        "-v",
        f"{skills}:/skills:ro",
        "-e",
        "DUCKDB_VECTORS_APPEND_DIR=/skills",
        image,
        "search",
        "roll back a bad release",
        "--json",
    )
    first = json.loads(result.stdout)["results"][0]
    assert first["source"] == "registry/rollback.md"
    assert "files   2 seen: 2 new" in result.stderr  # the append's summary, not on stdout


def test_a_build_with_nothing_to_index_fails_clearly(image: str, tmp_path: Path) -> None:
    empty = REPOSITORY / ".build" / "empty-docs"
    empty.mkdir(parents=True, exist_ok=True)
    (empty / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    result = docker(
        "build",
        "-f",
        "Dockerfile.runtime",
        "--build-arg",
        f"BUILDER_IMAGE={BUILDER}",
        "--build-arg",
        "DOCS=.build/empty-docs",
        "-t",
        f"{image}-empty",
        ".",
        check=False,
    )
    assert result.returncode != 0
    assert "nothing was indexed from /docs" in result.stdout + result.stderr


def test_runtime_overhead_over_the_base_image(image: str) -> None:
    def size(name: str) -> int:
        return int(docker("image", "inspect", "--format", "{{.Size}}", name).stdout)

    model = sum(p.stat().st_size for p in STATIC_MODEL.iterdir())
    overhead = size(image) - size("python:3.12-slim") - model
    assert overhead < 300e6, f"{overhead / 1e6:.0f} MB over the base image (model excluded)"


def test_no_secrets_in_any_layer(image: str) -> None:
    history = docker("history", "--no-trunc", "--format", "{{.CreatedBy}}", image).stdout
    config = docker("inspect", "--format", "{{json .Config.Env}}", image).stdout
    for marker in (
        "AWS_SECRET",
        "AWS_ACCESS_KEY",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "PASSWORD",
        "API_KEY",
        "BEGIN PRIVATE KEY",
        "ghp_",
    ):
        assert marker not in history and marker not in config, marker
    files = shell(
        image,
        "find / -xdev \\( -name '.netrc' -o -name 'id_rsa*' -o -name '*.pem' -path '/root/*'"
        " -o -name '.git-credentials' -o -name '.pypirc' \\) 2>/dev/null",
    )
    assert files.strip() == ""
