"""The bake-then-freeze images, built by a real engine and run as a user would run them.

``duckdb-vectors bake`` runs from a folder outside the repository with the package installed
from its wheel (no checkout at hand), as after ``pip install duckdb-vectors``; the plain
``docker build -f Dockerfile.runtime`` runs from the checkout with no toolkit image present.
Needs a Docker engine (CI serves Podman's). Every image and container made here is removed,
also when a test fails.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import docker
import httpx2
import pytest
import yaml
from conftest import (
    CHUNKER_PACKAGES,
    DEFAULT_BACKEND,
    NEVER_SERVING,
    ONNX_MODEL,
    ONNX_PACKAGES,
    REPOSITORY,
    SCRIPT,
    SERVING_PACKAGES,
    STATIC_MODEL,
)
from git_server import commit_files, git, publish, serving
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from duckdb_vectors import UrlRule, VectorStore, index_folder
from duckdb_vectors.container.bake import verify_image
from duckdb_vectors.container.catalog import SERVER_METADATA_LABEL
from duckdb_vectors.container.engine import CREATED_BY_LABEL
from duckdb_vectors.errors import BakeError
from duckdb_vectors.serve.mcp_server import CORE_TOOLS, IMMUTABLE_TTL_MS

pytestmark = [pytest.mark.slow, pytest.mark.container]


def _engine_answers() -> bool:
    try:
        return bool(docker.from_env().ping())
    except docker.errors.DockerException:
        return False


# Without an engine these are skipped, saying why; CI serves one, so there they always run.
if not os.environ.get("CI") and not _engine_answers():
    pytestmark.append(
        pytest.mark.skip(reason="no container engine answers: start one, or set DOCKER_HOST")
    )

PREFIX = os.environ.get("DUCKDB_VECTORS_TEST_IMAGE", "duckdb-vectors-test")
BAKED = f"{PREFIX}-baked"
REBAKED = f"{PREFIX}-rebaked"
PLAIN = f"{PREFIX}-plain"
TOOLKIT = f"{PREFIX}-toolkit"
TOKEN = "container-token"
HARDENED = ["--network", "none", "--read-only", "--user", "65534", "--cap-drop", "ALL"]


def docker_cli(
    *arguments: str, check: bool = True, timeout: int = 900
) -> subprocess.CompletedProcess:
    result = subprocess.run(
        ["docker", *arguments], capture_output=True, text=True, timeout=timeout, cwd=REPOSITORY
    )
    if check and result.returncode != 0:
        raise AssertionError(f"docker {' '.join(arguments)} failed:\n{result.stderr[-3000:]}")
    return result


def shell(image: str, script: str) -> str:
    """Run a shell script inside the image (not its entrypoint); its stdout."""
    return docker_cli("run", "--rm", "--entrypoint", "sh", image, "-c", script).stdout


def remove_images(*references: str) -> None:
    for reference in references:
        docker_cli("rmi", "--force", reference, check=False)


def image_exists(reference: str) -> bool:
    return docker_cli("image", "inspect", reference, check=False).returncode == 0


def dangling_images() -> set[str]:
    listed = docker_cli("images", "--quiet", "--no-trunc", "--filter", "dangling=true", check=False)
    return set(listed.stdout.split())


@pytest.fixture(scope="session", autouse=True)
def no_images_left_behind() -> Iterator[None]:
    """The builds' untagged stage images go with the tests that made them (the images the
    tests tag are removed by the tests themselves). Session-scoped, so it is torn down after
    the session-scoped images (``baked``): their stage images are left dangling only then.
    Not forced: on an engine others build on too, an image a running build uses stays."""
    before = dangling_images()
    yield
    for _ in range(5):  # a stage image goes once the images built on it have
        made = sorted(dangling_images() - before)
        if not made or docker_cli("rmi", *made, check=False).returncode == 0:
            break


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """duckdb-vectors installed from its wheel into a folder of its own (no checkout)."""
    work = tmp_path_factory.mktemp("installed")
    source = work / "source"  # a copy, so the build leaves nothing in the checkout
    shutil.copytree(REPOSITORY / "duckdb_vectors", source / "duckdb_vectors")
    for name in ("pyproject.toml", "README.md", "Dockerfile.builder", "Dockerfile.runtime"):
        shutil.copy(REPOSITORY / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", work, source],
        check=True,
        capture_output=True,
    )
    wheel = next(work.glob("duckdb_vectors-*.whl"))
    target = work / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "-t", target, wheel],
        check=True,
        capture_output=True,
    )
    return target


def run_installed(
    installed: Path, *arguments: str, cwd: Path, **environment: str
) -> subprocess.CompletedProcess:
    """Python with the installed wheel first on the path (its dependencies from this
    environment), from ``cwd``; by default the CLI."""
    command = list(arguments) if arguments[0] == "-c" else ["-m", "duckdb_vectors.cli", *arguments]
    paths = os.pathsep.join([str(installed), sysconfig.get_paths()["purelib"]])
    env = {**os.environ, "PYTHONPATH": paths, **environment}
    return subprocess.run(
        [sys.executable, *command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )


@pytest.fixture(scope="session")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/docs, copied to a folder whose name has a space."""
    folder = tmp_path_factory.mktemp("outside") / "my docs"
    shutil.copytree(REPOSITORY / "examples" / "docs", folder)
    return folder


@pytest.fixture(scope="session")
def baked(installed: Path, docs: Path) -> Iterator[dict]:
    """The image `bake` makes from a folder outside the repository; its --json summary."""
    try:
        result = run_installed(
            installed,
            "bake",
            str(docs),
            "--tag",
            BAKED,
            "--json",
            "--label",
            "team=search",
            "--base-url",
            "https://docs.example.com/",
            "--catalog-entry",
            "catalog.yaml",
            "--lexical-weight",
            "0.55",  # as eval --tune would have chosen: the image must carry it
            cwd=docs.parent,
            DUCKDB_VECTORS_MODEL_PATH=str(STATIC_MODEL),
        )
        if result.returncode != 0:
            pytest.fail(f"bake failed:\n{result.stderr[-3000:]}")
        yield json.loads(result.stdout) | {"stderr": result.stderr}
    finally:
        remove_images(BAKED)


@pytest.fixture(scope="session")
def image(baked: dict) -> str:
    return baked["tag"]


def test_bake_builds_labels_and_verifies_from_an_installed_package(
    baked: dict, installed: Path
) -> None:
    assert baked["verified"] is True
    assert baked["chunk_count"] == 9 and baked["source_count"] == 4
    assert (baked["chunks_embedded"], baked["chunks_reused"], baked["from_image"]) == (9, 0, None)
    assert baked["cold_search_seconds"] > 0
    assert 0 < baked["overhead_bytes"] < baked["size_bytes"]
    assert baked["labels"]["team"] == "search"
    assert "step" in baked["stderr"] and "verifying" in baked["stderr"]  # progress on stderr
    # The build context came from the wheel, not from this checkout.
    located = run_installed(
        installed, "-c", "import duckdb_vectors; print(duckdb_vectors.__file__)", cwd=installed
    )
    assert located.stdout.startswith(str(installed))


def test_inspect_reads_the_manifest_from_labels_alone(image: str, installed: Path) -> None:
    inspected = run_installed(installed, "inspect", image, "--json", cwd=installed)
    assert inspected.returncode == 0, inspected.stderr
    from_labels = json.loads(inspected.stdout)
    from_file = json.loads(docker_cli("run", "--rm", image, "report", "--json").stdout)
    assert from_labels == from_file["manifest"]
    labels = json.loads(docker_cli("inspect", "--format", "{{json .Config.Labels}}", image).stdout)
    assert labels["io.duckdb-vectors.source-count"] == "4"
    assert labels["org.opencontainers.image.created"] == from_file["manifest"]["built_at"]
    text = run_installed(installed, "inspect", image, cwd=installed).stdout
    assert "chunks      9" in text and "sources     4" in text


def test_a_skill_for_the_baked_image_names_commands_that_answer(
    image: str, installed: Path, tmp_path: Path
) -> None:
    """`skill --image` reads the labels (runs nothing): its example searches for a page title
    that finds its page, fetches that page and its first chunk, and every command answers."""
    made = run_installed(installed, "skill", "--image", image, "--out", str(tmp_path), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    path = Path(made.stdout.strip())
    text = path.read_text()
    front = yaml.safe_load(text.split("---\n")[1])
    assert (
        front["name"] == path.parent.name and "9 passages from 4 documents" in front["description"]
    )
    assert "SOURCE" not in text and "CHUNK_ID" not in text and " overview " not in text
    lines = [
        line
        for block in re.findall(r"^```bash\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
        for line in block.splitlines()
        if line.strip() and not line.startswith("docker pull")  # a local image: nothing to pull
    ]
    assert lines and all(
        line.startswith(f"docker run --rm --network none {image} ") for line in lines
    )
    example = json.loads(
        docker_cli("inspect", "--format", "{{json .Config.Labels}}", image).stdout
    )["io.duckdb-vectors.example"]
    source = json.loads(example)["source"]
    for line in lines:
        ran = subprocess.run(line, shell=True, capture_output=True, text=True, timeout=300)
        assert ran.returncode == 0, f"{line}\n{ran.stderr}"
        answer = json.loads(ran.stdout)
        if " search " in line and "--filter" not in line:
            assert source in [hit["source"] for hit in answer["results"][:3]], line
        else:
            assert answer.get("results") or answer.get("text"), line


def test_the_image_carries_the_bm25_share_it_was_baked_with(image: str) -> None:
    labels = json.loads(docker_cli("inspect", "--format", "{{json .Config.Labels}}", image).stdout)
    assert labels["io.duckdb-vectors.lexical-weight"] == "0.55"
    report = json.loads(docker_cli("run", "--rm", image, "report", "--json").stdout)
    assert report["manifest"]["lexical_weight"] == 0.55


@pytest.mark.parametrize(
    ("image", "message"),
    [
        ("python:3.12-slim", "carries no duckdb-vectors manifest labels"),
        (f"{PREFIX}-never-built", "no image"),
    ],
)
def test_inspect_of_an_image_without_a_manifest_says_so(
    installed: Path, image: str, message: str
) -> None:
    result = run_installed(installed, "inspect", image, cwd=installed)
    assert result.returncode == 1
    assert result.stderr.startswith("Error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1


def test_the_content_hash_label_matches_an_index_built_on_the_host(
    image: str, docs: Path, tmp_path: Path
) -> None:
    labels = docker.from_env().images.get(image).labels
    with VectorStore(tmp_path / "host.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, docs, urls=UrlRule("https://docs.example.com/"))  # as baked
        assert store.manifest.content_hash == labels["io.duckdb-vectors.content-hash"]


def test_a_rebake_from_the_previous_image_embeds_only_the_page_that_changed(
    baked: dict, installed: Path, docs: Path, tmp_path: Path
) -> None:
    """`bake --from-image` starts the index stage from the previous image's index: the docs
    arrive as new files (read and hashed), and only the new section is embedded; the toolkit
    layers come from the cache."""
    changed = tmp_path / "docs"
    shutil.copytree(docs, changed)
    with (changed / "guides" / "searching.md").open("a") as page:
        page.write("\n## Snapshots\n\nRestore drills run every quarter.\n")
    try:
        result = run_installed(
            installed,
            "bake",
            str(changed),
            "--tag",
            REBAKED,
            "--from-image",
            BAKED,
            "--json",
            "--no-verify",
            cwd=tmp_path,
            DUCKDB_VECTORS_MODEL_PATH=str(STATIC_MODEL),
        )
        assert result.returncode == 0, result.stderr[-3000:]
        rebaked = json.loads(result.stdout)
        assert (rebaked["chunks_embedded"], rebaked["chunks_reused"]) == (1, 9)
        assert rebaked["chunk_count"] == 10 and rebaked["from_image"] == baked["image_id"]
        assert "previous index (PREVIOUS_IMAGE): reused: 9 chunks" in result.stderr
        assert rebaked["content_hash"] != baked["content_hash"]
        with VectorStore(
            tmp_path / "host.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL
        ) as host:
            index_folder(host, changed)  # what a cold bake of these docs would hold
            assert host.manifest.content_hash == rebaked["content_hash"]
        assert (rebaked["verified"], rebaked["cold_search_seconds"]) == (False, None)
        assert "verifying" not in result.stderr
        engine = docker.from_env()
        layers = [engine.images.get(tag).attrs["RootFS"]["Layers"] for tag in (BAKED, REBAKED)]
        shared = [a for a, b in zip(*layers, strict=True) if a == b]
        assert len(shared) >= len(layers[0]) - 2  # only the index (and its manifest) differ
    finally:
        remove_images(REBAKED)


def test_search_answers_from_the_baked_index(image: str) -> None:
    result = docker_cli(
        "run", "--rm", image, "search", "how are failed requests retried?", "--json"
    )
    payload = json.loads(result.stdout)
    assert payload["results"][0]["source"] == "guides/searching.md"
    assert payload["results"][0]["title"] == "Searching > Retries and timeouts"
    assert payload["results"][0]["url"] == "https://docs.example.com/guides/searching.html"


def test_hardened_run_with_no_network_and_a_read_only_root(image: str) -> None:
    result = docker_cli("run", "--rm", *HARDENED, image, "search", "E408", "--top-k", "1")
    assert "error code E408" in result.stdout
    assert result.stderr == ""  # no warnings from a read-only file system


def test_the_container_memory_limit_is_what_the_index_must_fit(image: str) -> None:
    """The in-memory index is loaded only if it fits (see ``memory_budget``): inside a
    container, the room left under its cgroup's limit."""
    script = "from duckdb_vectors.resources import available_memory; print(available_memory())"
    run = ("run", "--rm", "--memory", "300m", "--entrypoint", "python", image, "-c", script)
    assert 0 < int(docker_cli(*run).stdout) <= 300 << 20


def test_the_runtime_image_carries_only_what_serving_needs(image: str) -> None:
    listing = shell(
        image,
        "ls /app; for c in gcc cc; do command -v $c; done; ls /opt/venv/bin;"
        " ls /docs /src 2>&1 || true; find / -xdev -name '*.duckdb.wal' 2>/dev/null; id -u",
    ).split()
    assert listing[:3] == ["index-summary.json", "manifest.json", "vectors.duckdb"]
    assert not any(p.endswith(("/gcc", "/cc")) for p in listing)
    # The base image's own pip stays outside the venv; the venv has none.
    assert "duckdb-vectors" in listing and not any(p.startswith("pip") for p in listing)
    assert "10001" in listing  # not root
    assert not any(p.endswith(".wal") for p in listing)


def image_packages(image: str) -> set[str]:
    """The Python packages installed in an image, lowercase."""
    script = (
        "from importlib.metadata import distributions;"
        " print(*sorted({d.metadata['Name'].lower() for d in distributions()}))"
    )
    listing = docker_cli("run", "--rm", "--entrypoint", "python", image, "-c", script).stdout
    return set(listing.split())


def test_a_static_model_image_holds_only_the_packages_serving_needs(image: str) -> None:
    """The baked static model is embedded without fastembed: no onnxruntime or Pillow (about
    95 MB); the chunkers stay for a runtime append; and the image still serves."""
    packages = image_packages(image)
    assert packages >= SERVING_PACKAGES | CHUNKER_PACKAGES
    assert not packages & (ONNX_PACKAGES | NEVER_SERVING)
    assert verify_image(docker.from_env(), image, "retries and timeouts") > 0  # search and MCP


def test_what_serving_imports_is_compiled(image: str) -> None:
    """The root file system is read-only, so Python could cache no bytecode at run time: a
    start that compiled every module serving imports would take about twice the CPU time."""
    script = (
        "import sys; from pathlib import Path; from importlib.util import cache_from_source;"
        " import duckdb_vectors.cli, duckdb_vectors.serve.mcp_server, duckdb_vectors.indexer;"
        " files = [m.__file__ for m in list(sys.modules.values())"
        " if (getattr(m, '__file__', None) or '').endswith('.py')];"
        " print(len(files), [f for f in files if not Path(cache_from_source(f)).is_file()])"
    )
    listing = docker_cli("run", "--rm", *HARDENED, "--entrypoint", "python", image, "-c", script)
    imported, uncompiled = listing.stdout.split(" ", 1)
    assert int(imported) > 500 and uncompiled.strip() == "[]"


def test_mcp_over_docker_run_i(image: str) -> None:
    parameters = StdioServerParameters(
        command="docker",
        args=["run", "-i", "--rm", *HARDENED, image, "mcp"],
        env={key: os.environ[key] for key in ("DOCKER_HOST", "PATH") if key in os.environ},
    )

    async def scenario() -> None:
        async with Client(parameters, mode="legacy", read_timeout_seconds=60) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert tools == {"search", "fetch", "report"}
            result = await client.call_tool("search", {"query": "which agents can connect?"})
            assert result.is_error is False
            assert result.structured_content["results"][0]["source"] == "guides/agents.md"

    anyio.run(scenario)


def no_command_server(image: str, name: str) -> StdioServerParameters:
    """`docker run -i IMAGE`, no command: what the Docker MCP Gateway and client configs run."""
    return StdioServerParameters(
        command="docker",
        args=["run", "-i", "--rm", "--name", name, *HARDENED, image],
        env={key: os.environ[key] for key in ("DOCKER_HOST", "PATH") if key in os.environ},
    )


def test_no_command_with_stdin_attached_serves_mcp(image: str) -> None:
    name = f"{PREFIX}-no-command"

    async def scenario() -> None:
        async with Client(
            no_command_server(image, name), mode="legacy", read_timeout_seconds=60
        ) as client:
            assert client.server_info.name == "duckdb-vectors"
            tools = [tool.name for tool in (await client.list_tools()).tools]
            assert tools == ["search", "fetch", "report"]
            result = await client.call_tool("search", {"query": "which agents can connect?"})
            assert result.is_error is False
            assert result.structured_content["results"][0]["source"] == "guides/agents.md"
            # A client that shows only text (Docker Agent) gets one block, every hit in it
            # with its citation URL.
            assert [block.type for block in result.content] == ["text"]
            text = result.content[0].text
            for hit in result.structured_content["results"]:
                block = text.split(f"\n\n{hit['rank'] + 1}. [")[0].split(f"{hit['rank']}. [")[1]
                assert hit["url"] in block and hit["chunk_id"] in block

    try:
        anyio.run(scenario)
    finally:
        docker_cli("rm", "--force", name, check=False)


@pytest.mark.parametrize("terminal", [["-t"], []], ids=["terminal", "no-stdin"])
def test_no_command_without_an_mcp_client_prints_the_help(image: str, terminal: list) -> None:
    """A person at a terminal (`docker run -it IMAGE`), or a run with no stdin at all, gets
    the help and how to serve MCP, not a server waiting for JSON-RPC."""
    name = f"{PREFIX}-help"
    try:
        result = docker_cli("run", "--name", name, *terminal, image, timeout=120)
        assert "Usage: duckdb-vectors [OPTIONS] COMMAND" in result.stdout
        assert "docker run -i IMAGE" in result.stdout
        state = json.loads(docker_cli("inspect", name).stdout)[0]["State"]
        assert state["ExitCode"] == 0
    finally:
        docker_cli("rm", "--force", name, check=False)


# What the gateway takes from an image's label (pkg/catalog/import_spec.go, ImportedServer),
# and the fields of a catalog's server (pkg/catalog/types.go, Server) this entry may use.
IMPORTED_SERVER_FIELDS = {
    "name", "type", "image", "description", "title", "icon", "readme", "secrets", "env",
    "tools", "config", "prefix", "metadata",
}  # fmt: skip
TOOL_FIELDS = {"name", "description", "arguments", "annotations", "parameters"}
ANNOTATION_FIELDS = {
    "title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint",
}  # fmt: skip


def test_the_image_describes_itself_to_the_docker_mcp_gateway(
    baked: dict, image: str, docs: Path
) -> None:
    """The io.docker.server.metadata label and the --catalog-entry file say what the image's
    own server lists: its tools, their descriptions and annotations, its title."""
    name = f"{PREFIX}-describe"

    async def live() -> tuple:
        async with Client(
            no_command_server(image, name), mode="legacy", read_timeout_seconds=60
        ) as client:
            return client.server_info, (await client.list_tools()).tools

    try:
        server_info, tools = anyio.run(live)
    finally:
        docker_cli("rm", "--force", name, check=False)
    listed = [
        {
            "name": tool.name,
            "description": tool.description,
            "annotations": {"title": tool.title}
            | tool.annotations.model_dump(by_alias=True, exclude_none=True),
        }
        for tool in tools
    ]
    labels = json.loads(docker_cli("inspect", "--format", "{{json .Config.Labels}}", image).stdout)
    entry = yaml.safe_load(labels[SERVER_METADATA_LABEL])
    assert entry == yaml.safe_load(baked["labels"][SERVER_METADATA_LABEL])
    assert set(entry) <= IMPORTED_SERVER_FIELDS
    assert entry["name"] == BAKED and entry["type"] == "server"
    assert entry["title"] == server_info.title
    assert entry["tools"] == listed
    for tool in entry["tools"]:
        assert set(tool) <= TOOL_FIELDS and set(tool["annotations"]) <= ANNOTATION_FIELDS
        assert tool["annotations"]["readOnlyHint"] is True
    assert "9 chunks from 4 documents" in entry["description"]
    assert "guides/agents.md" in entry["description"]
    assert baked["backend"] in entry["description"]

    catalog = yaml.safe_load((docs.parent / "catalog.yaml").read_text())
    assert baked["catalog_entry"] == "catalog.yaml"
    assert list(catalog["registry"]) == [BAKED]
    server = catalog["registry"][BAKED]
    assert server["image"] == BAKED
    assert (server["longLived"], server["disableNetwork"]) == (True, True)
    described = {key: value for key, value in server.items() if key in IMPORTED_SERVER_FIELDS}
    assert described == entry | {"image": BAKED}


def test_mcp_over_http_from_the_image(image: str) -> None:
    """`docker run -p PORT:8000 IMAGE mcp --transport http --host 0.0.0.0`: health, a search
    over streamable HTTP with the bearer token, and a clean stop on `docker stop`."""
    port = free_port()
    started = docker_cli(
        "run",
        "-d",
        "--read-only",
        "--user",
        "65534",
        "--cap-drop",
        "ALL",
        "-p",
        f"127.0.0.1:{port}:8000",
        "-e",
        f"DUCKDB_VECTORS_AUTH_TOKEN={TOKEN}",
        image,
        "mcp",
        "--transport",
        "http",
        "--host",
        "0.0.0.0",
    )
    container = started.stdout.strip()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(f"{base}/health", container)

        async def scenario() -> None:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
            transport = streamable_http_client(f"{base}/mcp", http_client=http)
            async with Client(transport, mode="legacy") as client:
                result = await client.call_tool("search", {"query": "which agents can connect?"})
                hits = result.structured_content["results"]
                assert hits[0]["source"] == "guides/agents.md"
                assert hits[0]["url"] == "https://docs.example.com/guides/agents.html"

        anyio.run(scenario)
        docker_cli("stop", "--time", "30", container)
        state = json.loads(docker_cli("inspect", container).stdout)[0]["State"]
        assert state["ExitCode"] == 0
    finally:
        docker_cli("rm", "--force", container, check=False)


# --- the client configurations in docker/agents, run as written ------------------------------
#
# Each example's command line (or URL) exactly as configured, only its placeholders replaced:
# the image name, the index path and the URL of a served image. Docker Agent gives a toolset
# 10 s to answer tools/list at start; the rest list tools before the user's first prompt.

AGENTS = REPOSITORY / "docker" / "agents"
AGENT_CONFIGS = sorted(path.name for path in AGENTS.iterdir() if path.suffix in {".json", ".yaml"})
PLACEHOLDER_IMAGE = "my-docs-search"
PLACEHOLDER_INDEXES = ("/absolute/path/to/vectors.duckdb", "/app/vectors.duckdb")
PLACEHOLDER_URL = "http://localhost:8000/mcp"
PLACEHOLDER_TOKEN = "change-me"
TOOLS_LISTED_WITHIN_S = 10


def configured_servers(name: str) -> list[dict]:
    """The MCP servers a configuration file names: Docker Agent's mcp toolsets, or the
    ``mcpServers`` of Claude Desktop and Cursor."""
    text = (AGENTS / name).read_text()
    if name.endswith(".json"):
        return list(json.loads(text)["mcpServers"].values())
    agents = yaml.safe_load(text)["agents"].values()
    return [
        toolset for agent in agents for toolset in agent["toolsets"] if toolset["type"] == "mcp"
    ]


@pytest.fixture(scope="session")
def local_index(docs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documents the image holds, indexed on this machine (the CLI examples' index)."""
    path = tmp_path_factory.mktemp("agents") / "vectors.duckdb"
    with VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, docs, urls=UrlRule("https://docs.example.com/"))
    return path


def substituted(value: str, image: str, index: Path, url: str) -> str:
    for placeholder, real in [
        (PLACEHOLDER_IMAGE, image),
        *((placeholder, str(index)) for placeholder in PLACEHOLDER_INDEXES),
        (PLACEHOLDER_URL, url),
    ]:
        if value == placeholder:
            return real
    return value


def served_image_url(image: str, token: str) -> tuple[str, str]:
    """The image serving streamable HTTP as docker-agent-remote.yaml says to start it (on a
    free port); its /mcp URL and container id."""
    port = free_port()
    container = docker_cli(
        "run", "-d", "-p", f"127.0.0.1:{port}:8000", "-e", f"DUCKDB_VECTORS_AUTH_TOKEN={token}",
        image, "mcp", "--transport", "http", "--host", "0.0.0.0",
    ).stdout.strip()  # fmt: skip
    wait_until_ready(f"http://127.0.0.1:{port}/health", container)
    return f"http://127.0.0.1:{port}/mcp", container


def transport_of(server: dict, image: str, index: Path, url: str) -> Any:
    """What the configuration starts or reaches, placeholders replaced: a spawned command
    (the environment as the client passes it: its own, plus the entry's env), or a URL."""
    if "remote" in server:
        remote = server["remote"]
        assert remote["transport_type"] == "streamable"
        headers = dict(remote.get("headers", {}))
        http = httpx2.AsyncClient(headers=headers, timeout=60)
        return streamable_http_client(
            substituted(remote["url"], image, index, url), http_client=http
        )
    local = {
        "PATH": os.pathsep.join([str(Path(SCRIPT).parent), os.environ["PATH"]]),  # the CLI
        "DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL),  # no hub here: the model's files
    }
    env = {
        key: substituted(str(value), image, index, url)
        for key, value in server.get("env", {}).items()
    }
    return StdioServerParameters(
        command=server["command"],
        args=[substituted(argument, image, index, url) for argument in server["args"]],
        env={**os.environ, **local, **env},
    )


@pytest.mark.parametrize("name", AGENT_CONFIGS)
def test_every_agent_configuration_lists_the_tools_and_searches(
    name: str, image: str, local_index: Path
) -> None:
    servers = configured_servers(name)
    assert servers, f"{name} configures no MCP server"
    remote = any("remote" in server for server in servers)
    url, container = served_image_url(image, PLACEHOLDER_TOKEN) if remote else ("", None)
    ours = ("ps", "-aq", "--filter", f"ancestor={image}")  # other tests' containers stay
    before = set(docker_cli(*ours).stdout.split())

    async def scenario(server: dict) -> None:
        started = time.monotonic()
        transport = transport_of(server, image, local_index, url)
        async with Client(transport, mode="legacy", read_timeout_seconds=60) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            listed = time.monotonic() - started
            assert tools == list(CORE_TOOLS)
            assert listed < TOOLS_LISTED_WITHIN_S, f"tools listed after {listed:.1f} s"
            result = await client.call_tool("search", {"query": "which agents can connect?"})
            assert result.is_error is False
            assert result.structured_content["results"][0]["source"] == "guides/agents.md"
            assert AGENTS_PAGE in result.content[0].text  # what a text-only client shows

    try:
        for server in servers:
            anyio.run(scenario, server)
    finally:
        spawned = set(docker_cli(*ours).stdout.split()) - before
        leftovers = [*spawned, *([container] if container else [])]
        if leftovers:
            docker_cli("rm", "--force", *leftovers, check=False)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_ready(health: str, container: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(health, timeout=5) as response:
                if json.load(response)["status"] == "ready":
                    return
        except (OSError, ValueError):
            time.sleep(0.5)
    logs = docker_cli("logs", container, check=False)
    raise AssertionError(f"{health} never said ready:\n{logs.stderr[-2000:]}")


# --- real clients of both protocol eras (tests/clients, installed by `make clients`) ------
#
# The official TypeScript SDK (@modelcontextprotocol/sdk for the 2025-11-25 era,
# @modelcontextprotocol/client pinned to 2026-07-28) and the MCP Inspector CLI drive the image
# as a user's configuration runs it: over stdio with no command, and over streamable HTTP.

CLIENTS = REPOSITORY / "tests" / "clients"
CLIENT_LABEL = f"io.duckdb-vectors.test-client={PREFIX}"  # every container a client spawns
AGENTS_PAGE = "https://docs.example.com/guides/agents.html"


@pytest.fixture(scope="session")
def node() -> str:
    """Node.js, with tests/clients installed: in CI a failure saying what is missing (it must
    run there), elsewhere a skip saying so."""
    found = shutil.which("node")
    if found is None:
        problem = "node is not installed: the MCP client tests need Node.js 20+ and npm"
    elif not (CLIENTS / "node_modules" / ".package-lock.json").is_file():
        problem = "tests/clients is not installed: run make clients (npm ci in tests/clients)"
    else:
        return found
    if os.environ.get("CI"):
        pytest.fail(problem, pytrace=False)
    pytest.skip(problem)


@pytest.fixture
def stdio_target(image: str) -> Iterator[list[str]]:
    """The image as an MCP client configuration spawns it (`docker run -i`, no command);
    whatever the client leaves running is removed."""
    yield ["--", "docker", "run", "-i", "--rm", "--label", CLIENT_LABEL, *HARDENED, image]
    spawned = docker_cli("ps", "-aq", "--filter", f"label={CLIENT_LABEL}").stdout.split()
    if spawned:
        docker_cli("rm", "--force", *spawned, check=False)


@pytest.fixture
def http_target(image: str) -> Iterator[list[str]]:
    """The image serving streamable HTTP behind a bearer token, as a replica would."""
    port = free_port()
    started = docker_cli(
        "run", "-d", "--read-only", "--user", "65534", "--cap-drop", "ALL",
        "-p", f"127.0.0.1:{port}:8000", "-e", f"DUCKDB_VECTORS_AUTH_TOKEN={TOKEN}",
        image, "mcp", "--transport", "http", "--host", "0.0.0.0",
    )  # fmt: skip
    container = started.stdout.strip()
    try:
        wait_until_ready(f"http://127.0.0.1:{port}/health", container)
        yield [
            "--url",
            f"http://127.0.0.1:{port}/mcp",
            "--header",
            f"Authorization: Bearer {TOKEN}",
        ]
    finally:
        docker_cli("rm", "--force", container, check=False)


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest) -> list[str]:
    return request.getfixturevalue(f"{request.param}_target")


def run_node(node: str, *arguments: str | Path) -> dict:
    """A client script (or the Inspector), its JSON answer; a failure shows its stderr."""
    result = subprocess.run(
        [node, *map(str, arguments)], capture_output=True, text=True, timeout=600, cwd=CLIENTS
    )
    assert result.returncode == 0, (
        f"{arguments[0]} failed:\n{result.stdout[-1500:]}{result.stderr[-1500:]}"
    )
    return json.loads(result.stdout)


def inspector(node: str, target: list[str], *arguments: str) -> dict:
    """`mcp-inspector --cli` (what `npx @modelcontextprotocol/inspector --cli` runs), its
    result; the docker CLI it spawns for stdio is given DOCKER_HOST."""
    if target[0] == "--":
        where = ["-e", f"DOCKER_HOST={os.environ.get('DOCKER_HOST', '')}", *target[1:]]
    else:
        url, header = target[1], target[3]
        where = [url, "--header", header]
    launcher = CLIENTS / "node_modules" / ".bin" / "mcp-inspector"
    answer = run_node(node, launcher, "--cli", *where, *arguments, "--format", "json", "-q")
    return answer["result"]


def assert_tools_and_answers(answer: dict) -> None:
    """Both eras: the tools in their declared order, read-only with output schemas; a search
    whose text cites each hit; a fetch of its first hit."""
    assert [tool["name"] for tool in answer["tools"]] == list(CORE_TOOLS)
    assert all(tool["read_only"] and tool["output_schema"] for tool in answer["tools"])
    assert answer["server_info"]["name"] == "duckdb-vectors"
    search, fetched = answer["search"], answer["fetch"]
    assert search["is_error"] is False
    first = search["structured"]["results"][0]
    assert (first["source"], first["url"]) == ("guides/agents.md", AGENTS_PAGE)
    assert AGENTS_PAGE in search["text"][0]
    assert fetched["is_error"] is False and "Connecting an agent" in fetched["text"][0]


def test_the_typescript_sdk_in_the_2025_era(node: str, target: list[str]) -> None:
    answer = run_node(node, CLIENTS / "sdk-2025.mjs", *target)
    assert answer["protocol_version"] == "2025-11-25"
    assert_tools_and_answers(answer)
    # Streamable HTTP without sessions: nothing to carry from one request to the next.
    assert not any(exchange["answered_session"] for exchange in answer["exchanges"])


def test_the_typescript_sdk_in_the_2026_era(node: str, target: list[str]) -> None:
    """server/discover instead of initialize, cache hints that say the baked index cannot
    change (private behind the bearer token), and a tools/call with no handshake before it."""
    answer = run_node(node, CLIENTS / "sdk-2026.mjs", *target)
    assert (answer["protocol_version"], answer["era"]) == ("2026-07-28", "modern")
    assert "2026-07-28" in answer["discover"]["supported_versions"]
    assert "tools" in answer["discover"]["capabilities"]
    scope = "private" if "--url" in target else "public"
    for result in (answer["discover"], answer["tools_list"]):
        assert (result["ttlMs"], result["cacheScope"]) == (IMMUTABLE_TTL_MS, scope)
    assert_tools_and_answers(answer)
    stateless = answer["stateless"]["search"]
    assert stateless["is_error"] is False
    assert stateless["structured"]["results"][0]["source"] == "guides/agents.md"
    if "--url" in target:
        methods = [exchange["method"] for exchange in answer["exchanges"]]
        assert methods == ["server/discover", "tools/list", "tools/call", "tools/call"]
        assert [e["method"] for e in answer["stateless"]["exchanges"]] == ["tools/call"]
        every = answer["exchanges"] + answer["stateless"]["exchanges"]
        assert not any(e["sent_session"] or e["answered_session"] for e in every)
        assert all(exchange["status"] == 200 for exchange in every)


def test_the_mcp_inspector_cli_in_both_eras(node: str, target: list[str]) -> None:
    listed = inspector(node, target, "--method", "tools/list")
    assert [tool["name"] for tool in listed["tools"]] == list(CORE_TOOLS)
    call = ["--method", "tools/call", "--tool-name", "search", "--tool-arg", "query=E408"]
    found = inspector(node, target, *call)
    assert found["structuredContent"]["results"][0]["source"] == "guides/searching.md"

    modern = ["--protocol-era", "modern"]
    initialized = inspector(node, target, *modern, "--method", "initialize")
    assert initialized["protocolVersion"] == "2026-07-28"
    fetch = ["--method", "tools/call", "--tool-name", "fetch", "--tool-arg", "id=guides/agents.md"]
    fetched = inspector(node, target, *modern, *fetch)
    assert fetched["isError"] is False and "Connecting an agent" in fetched["content"][0]["text"]
    assert fetched["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "duckdb-vectors"


def test_runtime_append_of_a_mounted_registry(image: str) -> None:
    skills = REPOSITORY / "examples" / "skills"
    result = docker_cli(
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


def test_verification_refuses_an_image_that_is_not_an_index() -> None:
    with pytest.raises(BakeError, match=r"verification failed: .*did not run"):
        verify_image(docker.from_env(), "python:3.12-slim", "anything")


def test_runtime_overhead_over_the_base_image(baked: dict) -> None:
    """A static model's image holds serving's packages, compiled, and no fastembed,
    onnxruntime or Pillow (with them it was about 100 MB more)."""
    model = sum(p.stat().st_size for p in STATIC_MODEL.iterdir())
    overhead = baked["overhead_bytes"] - model
    assert overhead < 250e6, f"{overhead / 1e6:.0f} MB over the base image (model excluded)"


def test_a_transformer_model_image_keeps_the_onnx_runtime(
    installed: Path, docs: Path, image: str
) -> None:
    """Baked from the static model's image (--from-image), whose vectors it cannot use: one
    line says so, and every chunk is embedded."""
    tag = f"{PREFIX}-transformer"
    minilm = "fastembed:sentence-transformers/all-MiniLM-L6-v2"
    try:
        result = run_installed(
            installed,
            "bake",
            str(docs),
            "--tag",
            tag,
            "--backend",
            minilm,
            "--model-path",
            str(ONNX_MODEL),
            "--from-image",
            image,
            "--json",
            cwd=docs.parent,
        )
        assert result.returncode == 0, result.stderr[-3000:]  # bake verified search and MCP
        refused = [line for line in result.stderr.splitlines() if "not reused" in line]
        assert refused == [
            f"--from-image {image}: not reused: its vectors were made with {DEFAULT_BACKEND},"
            f" this build embeds with {minilm}; embedding every chunk"
        ]
        summary = json.loads(result.stdout)
        assert (summary["chunks_embedded"], summary["chunks_reused"]) == (9, 0)
        assert summary["from_image"] is None
        packages = image_packages(tag)
        assert packages >= SERVING_PACKAGES | CHUNKER_PACKAGES | ONNX_PACKAGES
        assert not packages & NEVER_SERVING
        answer = docker_cli("run", "--rm", *HARDENED, tag, "search", "E408", "--top-k", "1")
        assert "error code E408" in answer.stdout
    finally:
        remove_images(tag)


def test_no_secrets_in_any_layer(image: str) -> None:
    history = docker_cli("history", "--no-trunc", "--format", "{{.CreatedBy}}", image).stdout
    config = docker_cli("inspect", "--format", "{{json .Config.Env}}", image).stdout
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


def bake_over_the_host_network(installed: Path, cwd: Path, tag: str, *what: str) -> dict:
    """``bake WHAT --tag TAG --network host`` (the build fetches from this machine's
    loopback), which must succeed; its --json summary."""
    result = run_installed(
        installed,
        *("bake", *what, "--tag", tag, "--json", "--network", "host"),
        cwd=cwd,
        DUCKDB_VECTORS_MODEL_PATH=str(STATIC_MODEL),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def handbook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """examples/docs as the handbook/ folder of a repository tagged v1.0, served over HTTP on
    this machine's loopback: the SOURCE URL and the tagged commit."""
    work = tmp_path_factory.mktemp("handbook-repository")
    shutil.copytree(REPOSITORY / "examples" / "docs", work / "handbook")
    git(work, "init", "--quiet", "--initial-branch=main")
    commit_files(work, {"README.md": "# Not in the handbook\n"}, "the handbook")
    git(work, "tag", "v1.0")
    served = tmp_path_factory.mktemp("served")
    publish(work, served, "docs.git")
    with serving(served) as server:
        yield (
            f"git+{server.url}/docs.git@v1.0#subdirectory=handbook",
            git(work, "rev-parse", "v1.0"),
        )


def test_bake_a_git_source_fetched_by_the_build(
    installed: Path, handbook: tuple[str, str], tmp_path: Path
) -> None:
    """A git SOURCE is fetched in the index stage, over HTTP from a server on this machine's
    loopback (so the build uses the host's network); the runtime image has no git, and its
    manifest, labels and `inspect` record the repository and the commit."""
    source, commit = handbook
    tag = f"{PREFIX}-git"
    try:
        summary = bake_over_the_host_network(installed, tmp_path, tag, source)
        assert (summary["source"], summary["commit"], summary["verified"]) == (source, commit, True)
        assert summary["chunk_count"] == 9 and summary["source_count"] == 4
        labels = docker.from_env().images.get(tag).labels
        (record,) = json.loads(labels["io.duckdb-vectors.sources"])
        assert (record["kind"], record["location"], record["commit"]) == ("git", source, commit)
        inspected = run_installed(installed, "inspect", tag, cwd=tmp_path).stdout
        assert f"origin      {source} (git, commit {commit[:12]}" in inspected
        assert shell(tag, "command -v git || echo no git").strip() == "no git"
        answer = docker_cli("run", "--rm", *HARDENED, tag, "search", "E408", "--top-k", "1")
        assert "error code E408" in answer.stdout
    finally:
        remove_images(tag)


def test_bake_a_bundle_of_a_folder_and_a_git_repository(
    installed: Path, handbook: tuple[str, str], tmp_path: Path
) -> None:
    """A bundle's folder goes in the context and its git repository is fetched by the build;
    the image serves both libraries, each searchable alone, and says so to agents."""
    source, _ = handbook
    shutil.copytree(REPOSITORY / "examples" / "docs", tmp_path / "guide")
    bundle = tmp_path / "docs.yaml"
    bundle.write_text(
        "libraries:\n"
        "  - {name: guide, source: guide, description: The example guide}\n"
        f"  - {{name: tool, version: '1.0', source: '{source}'}}\n"
    )
    tag = f"{PREFIX}-bundle"
    try:
        summary = bake_over_the_host_network(installed, tmp_path, tag, "--bundle", str(bundle))
        assert summary["verified"] is True and summary["source_count"] == 8
        inspected = run_installed(installed, "inspect", tag, cwd=tmp_path).stdout
        assert "libraries   2" in inspected and "tool 1.0 (4 pages)" in inspected
        label = docker.from_env().images.get(tag).labels["io.docker.server.metadata"]
        entry = yaml.safe_load(label)
        assert "the docs of 2 libraries (guide, tool 1.0)" in entry["description"]
        assert "libraries" in [tool["name"] for tool in entry["tools"]]  # the image's server's
        answer = docker_cli(
            "run", "--rm", *HARDENED, tag, "search", "E408", "--library", "tool", "--json"
        )
        sources = {hit["source"] for hit in json.loads(answer.stdout)["results"]}
        assert sources and all(name.startswith("tool/1.0/") for name in sources)
    finally:
        remove_images(tag)


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *arguments: object) -> None:
        pass


@pytest.fixture(scope="module")
def served_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """examples/docs as a small site on this machine's loopback, with an llms.txt listing its
    Markdown pages: the llms.txt's URL."""
    root = tmp_path_factory.mktemp("site")
    shutil.copytree(REPOSITORY / "examples" / "docs", root / "docs")
    pages = sorted(p.relative_to(root / "docs").as_posix() for p in (root / "docs").rglob("*.md"))
    links = "".join(f"- [{page}]({page})\n" for page in pages)
    (root / "docs" / "llms.txt").write_text(f"# Example docs\n\n## Pages\n\n{links}")
    handler = functools.partial(QuietHandler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/docs/llms.txt"
    finally:
        server.shutdown()
        server.server_close()


def test_bake_an_llms_txt_fetched_by_the_build(
    installed: Path, served_site: str, tmp_path: Path
) -> None:
    """A site's llms.txt is read by the index stage over HTTP (the host's network, for a
    server on its loopback); the image cites each page by its address and runs offline."""
    tag = f"{PREFIX}-site"
    try:
        summary = bake_over_the_host_network(installed, tmp_path, tag, served_site)
        assert (summary["source"], summary["verified"]) == (served_site, True)
        assert summary["source_count"] == 4
        labels = docker.from_env().images.get(tag).labels
        (record,) = json.loads(labels["io.duckdb-vectors.sources"])
        assert (record["kind"], record["location"]) == ("llms.txt", served_site)
        answer = docker_cli("run", "--rm", *HARDENED, tag, "search", "E408", "--json")
        (best, *_) = json.loads(answer.stdout)["results"]
        assert best["url"].startswith(served_site.removesuffix("llms.txt"))
    finally:
        remove_images(tag)


def test_the_plain_docker_build_takes_the_source_as_a_build_argument(
    handbook: tuple[str, str],
) -> None:
    """`docker build --build-arg SOURCE=...` from a checkout fetches it as bake does."""
    source, commit = handbook
    model = REPOSITORY / ".build" / "git-test-model"
    shutil.rmtree(model, ignore_errors=True)
    shutil.copytree(STATIC_MODEL, model)
    tag = f"{PREFIX}-plain-git"
    arguments = (
        "--build-arg",
        f"SOURCE={source}",
        "--build-arg",
        "MODEL_DIR=.build/git-test-model",
    )
    try:
        docker_cli(
            "build",
            "--force-rm",
            "--network",
            "host",
            "-f",
            "Dockerfile.runtime",
            *arguments,
            "-t",
            tag,
            ".",
        )
        manifest = json.loads(shell(tag, "cat /app/manifest.json"))["manifest"]
        (record,) = manifest["sources"]
        assert (record["kind"], record["location"], record["commit"]) == ("git", source, commit)
        answer = docker_cli("run", "--rm", *HARDENED, tag, "search", "E408", "--top-k", "1")
        assert "error code E408" in answer.stdout
    finally:
        remove_images(tag)
        shutil.rmtree(REPOSITORY / ".build", ignore_errors=True)


# --- bad input: one line, a non-zero exit, nothing tagged, no container left -------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.md").write_text("# Page\n\nSome text to index.\n")
    return docs


@pytest.mark.parametrize(
    ("arrange", "expected"),
    [
        (lambda docs: ["missing-folder"], "missing-folder does not exist"),
        (lambda docs: [str(docs / "page.md")], "is not a folder"),
        (lambda docs: _only_images(docs), "has nothing to index"),
        (lambda docs: [str(docs), "--model-path", str(docs / "no-model")], "model folder"),
        (lambda docs: [str(docs), "--tag", "Not A Tag"], "is not an image name"),
        (lambda docs: [str(docs), "--label", "no-equals"], "is not KEY=VALUE"),
        (
            lambda docs: [str(docs), "--from-image", f"{PREFIX}-never-built"],
            "no such image in this engine",
        ),
        (
            lambda docs: [str(docs), "--from-image", "python:3.12-slim"],
            "holds no duckdb-vectors index",
        ),
        (
            lambda docs: [str(docs), "--catalog-entry", str(docs / "nowhere" / "c.yaml")],
            "does not exist; create it first",
        ),
    ],
    ids=[
        "missing",
        "a-file",
        "nothing-indexable",
        "no-model-folder",
        "bad-tag",
        "bad-label",
        "no-previous-image",
        "not-an-index-image",
        "catalog-entry-folder",
    ],
)
def test_bad_input_is_one_line_and_leaves_nothing(
    installed: Path, outside: Path, arrange, expected: str
) -> None:
    arguments = arrange(outside)
    tag = [] if "--tag" in arguments else ["--tag", f"{PREFIX}-bad"]
    result = run_installed(installed, "bake", *arguments, *tag, cwd=outside.parent)
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: ")
    assert expected in result.stderr
    assert not image_exists(f"{PREFIX}-bad")


def _only_images(docs: Path) -> list[str]:
    (docs / "page.md").unlink()
    (docs / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    (docs / ".hidden.md").write_text("# hidden\n")
    return [str(docs)]


def bake_outside(installed: Path, docs: Path, *options: str, **environment: str):
    """`bake` of ``docs`` to the tag that must never exist, from the folder above ``docs``."""
    return run_installed(
        installed,
        "bake",
        str(docs),
        "--tag",
        f"{PREFIX}-bad",
        *options,
        cwd=docs.parent,
        **environment,
    )


def test_no_engine_says_how_to_get_one(installed: Path, outside: Path) -> None:
    result = bake_outside(installed, outside, DOCKER_HOST="unix:///nonexistent/docker.sock")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "Error: no container engine answers at unix:///nonexistent/docker.sock: start Docker"
        " (or Podman's Docker-compatible service: podman system service), or set DOCKER_HOST"
        " to one that runs"
    )


def test_a_failing_build_step_shows_its_last_lines_and_tags_nothing(
    installed: Path, outside: Path
) -> None:
    result = bake_outside(
        installed,
        outside,
        "--base-image",
        "localhost/duckdb-vectors-no-such-base:1",
        DUCKDB_VECTORS_MODEL_PATH=str(STATIC_MODEL),
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("Error: ") and "no-such-base" in result.stderr
    assert any(line.startswith("  | ") for line in lines)  # the build's last lines
    assert not image_exists(f"{PREFIX}-bad")


def test_the_plain_docker_build_needs_no_toolkit_image(tmp_path: Path) -> None:
    """`docker build -f Dockerfile.runtime` from a checkout builds its toolkit stage itself."""
    model = REPOSITORY / ".build" / "test-model"
    shutil.rmtree(model, ignore_errors=True)
    shutil.copytree(STATIC_MODEL, model)
    assert not image_exists("duckdb-vectors-builder")
    build = [
        "build",
        "--force-rm",
        "-f",
        "Dockerfile.runtime",
        "--build-arg",
        "MODEL_DIR=.build/test-model",
    ]
    try:
        docker_cli(*build, "--build-arg", "DOCS=examples/docs", "-t", PLAIN, ".")
        result = docker_cli("run", "--rm", *HARDENED, PLAIN, "search", "E408", "--top-k", "1")
        assert "error code E408" in result.stdout
        # A prebuilt toolkit image (Dockerfile.builder) is reused through BUILDER_IMAGE: its
        # CLI runs the index step, which fails on a folder with nothing to index, clearly. (The
        # stages after the index step are the ones the build above ran: a third full image would
        # only prove them again.) PREVIOUS_IMAGE names the image just built, not pulled: its
        # index (of the same model) is the start, and its chunks, all gone, are pruned.
        model = ["--build-arg", "MODEL_DIR=.build/test-model"]
        docker_cli("build", "--force-rm", "-f", "Dockerfile.builder", *model, "-t", TOOLKIT, ".")
        empty = REPOSITORY / ".build" / "empty-docs"
        empty.mkdir(parents=True, exist_ok=True)
        (empty / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n")
        failed = docker_cli(
            *build,
            "--build-arg",
            f"BUILDER_IMAGE={TOOLKIT}",
            "--build-arg",
            "DOCS=.build/empty-docs",
            "--build-arg",
            f"PREVIOUS_IMAGE={PLAIN}",
            "-t",
            f"{PLAIN}-empty",
            ".",
            check=False,
        )
        output = failed.stdout + failed.stderr
        assert "toolkit: using the one already in this image" in output
        assert "previous index (PREVIOUS_IMAGE): reused: 9 chunks" in output
        assert failed.returncode != 0
        assert "nothing was indexed from /docs" in output
        assert not image_exists(f"{PLAIN}-empty")
    finally:
        remove_images(PLAIN, f"{PLAIN}-empty", TOOLKIT)
        shutil.rmtree(REPOSITORY / ".build", ignore_errors=True)


def test_no_container_is_left_behind() -> None:
    """Runs last in this module: bake and the builds above removed every container they made."""
    engine = docker.from_env()
    ours = engine.containers.list(all=True, filters={"label": CREATED_BY_LABEL})
    assert ours == []
    building = [c for c in engine.containers.list(all=True) if PREFIX in str(c.image)]
    assert building == []
