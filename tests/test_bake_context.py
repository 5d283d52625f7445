"""What `bake` does without an engine: the build context it sends, read back as the tar it
is; the labels; and how it talks to an image's MCP server, over a socket that carries the
engine's attach frames."""

from __future__ import annotations

import json
import shutil
import socket
import struct
import tarfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from conftest import DEFAULT_BACKEND, ONNX_MODEL, REPOSITORY, STATIC_MODEL, run_cli
from test_indexer import a_docs_site, write

from duckdb_vectors import Manifest, VectorStore, index_folder
from duckdb_vectors.container import engine, previous
from duckdb_vectors.container.bake import BakeSummary, bundle_context
from duckdb_vectors.container.context import write_context
from duckdb_vectors.container.labels import manifest_from_labels, manifest_labels
from duckdb_vectors.embedders import fingerprint_directory
from duckdb_vectors.errors import EngineError
from duckdb_vectors.index.manifest import LibraryRecord
from duckdb_vectors.index.schema import SCHEMA_VERSION
from duckdb_vectors.rendering import bake_summary_as_text


def members(docs: Path | None, model: Path | None = None) -> dict[str, tarfile.TarInfo]:
    context = write_context(docs, model)
    try:
        with tarfile.open(fileobj=context.archive) as tar:
            return {member.name: member for member in tar.getmembers()}
    finally:
        context.close()


def test_the_context_has_the_shape_of_a_checkout(tmp_path: Path) -> None:
    docs = tmp_path / "my docs"
    write(docs, "guide.md", "# Guide\n\nText.\n")
    names = members(docs, STATIC_MODEL)
    for name in ("Dockerfile.runtime", "Dockerfile.builder", "pyproject.toml", "README.md"):
        assert name in names
    assert "duckdb_vectors/container/install-toolkit.sh" in names
    assert "input/docs/guide.md" in names
    assert {f"input/model/{p.name}" for p in STATIC_MODEL.iterdir()} <= set(names)
    assert not any(name.endswith(".pyc") or "__pycache__" in name for name in names)
    assert not any(name.endswith(".so") for name in names)  # no build of this machine's


def test_the_same_files_give_the_same_context(tmp_path: Path) -> None:
    """Fixed owners and times: the engine's cache sees the toolkit's files unchanged."""
    docs = tmp_path / "docs"
    write(docs, "guide.md", "# Guide\n\nText.\n")
    entries = members(docs)
    assert {(m.mtime, m.uid, m.gid, m.uname) for m in entries.values()} == {(0, 0, 0, "")}


def test_what_the_index_would_leave_out_is_not_sent(tmp_path: Path) -> None:
    docs = a_docs_site(tmp_path / "docs")
    write(docs, "guide.md", "# Guide\n\nText.\n")
    sent = {name.removeprefix("input/docs/") for name in members(docs) if "input/docs/" in name}
    assert "guide.md" in sent and ".gitignore" in sent
    for left_out in ("_static", "_build", "html/_sources", "node_modules", "site", "drafts"):
        assert not any(name == left_out or name.startswith(f"{left_out}/") for name in sent)
    assert "faq/old.tmp.md" not in sent and "faq/internal.md" not in sent
    assert not {"img/diagram.svg", "html/search/search_index.json", "html/sitemap.xml"} & sent


def test_the_manifest_survives_the_trip_through_image_labels(tmp_path: Path) -> None:
    """Every manifest field, lists of slices included, comes back from the labels as it was."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nInstall it with pip.\n")
    with VectorStore(tmp_path / "x.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, docs, metadata={"version": "2.0"})
        report = store.report()
    labels = manifest_labels(report, "python:3.12-slim")
    assert manifest_from_labels(labels) == Manifest.model_validate(report.manifest)
    assert manifest_from_labels(labels).slices[0].metadata == {"version": "2.0"}


def test_the_model_arguments_come_after_the_package_install() -> None:
    """Build arguments declared before a RUN are part of its cache key: declared after the
    install, they let images of another model (or model folder) reuse the installed toolkit."""
    for name in ("Dockerfile.builder", "Dockerfile.runtime"):
        lines = (REPOSITORY / name).read_text().splitlines()
        install = next(i for i, line in enumerate(lines) if "install-toolkit.sh /src" in line)
        for argument in ("ARG BACKEND=", "ARG MODEL_DIR="):
            declared = [i for i, line in enumerate(lines) if line.startswith(argument)]
            assert declared and min(declared) > install, f"{name}: {argument} before the install"


def test_a_source_the_build_fetches_sends_an_empty_docs_folder() -> None:
    names = members(None)
    assert names["input/docs"].isdir()
    assert not [name for name in names if name.startswith("input/docs/")]


def test_the_git_install_and_the_refresh_argument_leave_a_folder_bake_cached() -> None:
    """git's install comes before the folder's COPY (a folder's bakes keep its layer), and the
    REFRESH argument only right before the index run (which it must run again)."""
    lines = (REPOSITORY / "Dockerfile.runtime").read_text().splitlines()
    git = next(
        i for i, line in enumerate(lines) if "install -y -qq --no-install-recommends git" in line
    )
    copy = next(i for i, line in enumerate(lines) if line.startswith("COPY ${DOCS}"))
    refresh = lines.index('ARG REFRESH=""')
    index = next(i for i, line in enumerate(lines) if "duckdb-vectors index" in line)
    assert git < copy < refresh < index


def test_a_bundle_is_sent_as_the_index_stage_reads_it_each_library_in_its_language(
    tmp_path: Path,
) -> None:
    """The bundle file a bake rewrites for the build names each folder where the context puts
    it and keeps every key of its entries; indexed from the context as the image indexes it,
    each library is in its language."""
    write(tmp_path / "de", "tore.md", "# Tore\n\nDie Mannschaften spielten um den Sieg.\n")
    write(tmp_path / "en", "goals.md", "# Goals\n\nThe teams played for the win.\n")
    (tmp_path / "docs.yaml").write_text(
        "libraries:\n  - {name: fussball, source: de, language: german}\n"
        "  - {name: football, source: en, description: In English}\n"
    )
    folders, files, buildargs = bundle_context(tmp_path / "docs.yaml")
    context = write_context(None, None, folders, files)
    try:
        with tarfile.open(fileobj=context.archive) as tar:
            # Extraction filters came with Python 3.11.4 (Debian 12 has 3.11.2); the archive
            # is the one just made, so older Pythons extract it without one.
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(tmp_path / "context", **safe)
    finally:
        context.close()
    docs = tmp_path / "context" / "input" / "docs"
    built = run_cli(
        "index", "--bundle", str(docs / buildargs["BUNDLE"]), "--db", str(tmp_path / "x.duckdb"),
        "--backend", "hashing:64",
    )  # fmt: skip
    assert built.exit_code == 0, built.stderr
    with VectorStore(tmp_path / "x.duckdb", read_only=True) as store:
        assert [(r.name, r.language, r.description) for r in store.manifest.libraries] == [
            ("fussball", "german", None),
            ("football", None, "In English"),
        ]
        (hit,) = store.query_text("Mannschaft", filter={"library": "fussball"})
        assert hit.chunk.source == "fussball/tore.md"


@pytest.fixture
def previous_image_app(tmp_path: Path) -> Path:
    """What a previous image holds in /app: an index of a docs folder, and its manifest.json."""
    app = tmp_path / "app"
    app.mkdir()
    docs = tmp_path / "docs"
    write(docs, "guide.md", "# Guide\n\n## Install\n\nRun pip.\n\n## Retries\n\nThree times.\n")
    write(docs, "faq.md", "# FAQ\n\nEvery call needs an API key.\n")
    with VectorStore(app / "vectors.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, docs)
        (app / "manifest.json").write_text(store.report().model_dump_json())
    return app


def in_the_index_stage(
    app: Path, target: Path, monkeypatch: pytest.MonkeyPatch, backend: str, model: Path
) -> None:
    """The index stage's first step, with the model the stage's settings name."""
    monkeypatch.setenv("DUCKDB_VECTORS_BACKEND", backend)
    monkeypatch.setenv("DUCKDB_VECTORS_MODEL_PATH", str(model))
    previous.main(app, target, bundle=False)


def test_the_index_stage_starts_from_a_previous_index_of_its_model(
    previous_image_app: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    """Copied to where the index run writes: the docs, copied anew (as a build's COPY makes
    them: new files, each read and hashed), embed nothing but the page that changed."""
    target = tmp_path / "index" / "vectors.duckdb"
    in_the_index_stage(previous_image_app, target, monkeypatch, DEFAULT_BACKEND, STATIC_MODEL)
    assert (
        capsys.readouterr().err
        == f"{previous.NOTE}reused: 3 chunks; only chunks whose text changed are embedded\n"
    )
    copied = tmp_path / "docs-copied"
    shutil.copytree(tmp_path / "docs", copied)
    write(copied, "faq.md", "# FAQ\n\nEvery call needs a token.\n")
    with VectorStore(target, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        summary = index_folder(store, copied)
    assert (summary.files_read, summary.chunks_embedded, summary.chunks_reused) == (2, 1, 2)


def test_a_previous_index_of_another_model_is_not_reused_in_one_line(
    previous_image_app: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    target = tmp_path / "index" / "vectors.duckdb"
    minilm = "fastembed:sentence-transformers/all-MiniLM-L6-v2"
    in_the_index_stage(previous_image_app, target, monkeypatch, minilm, ONNX_MODEL)
    assert capsys.readouterr().err == (
        f"{previous.NOTE}not reused: its vectors were made with {DEFAULT_BACKEND}, this build"
        f" embeds with {minilm}; embedding every chunk\n"
    )
    assert not target.exists()
    # No previous image (the default PREVIOUS_IMAGE: an empty /app) is no news.
    in_the_index_stage(tmp_path / "empty", target, monkeypatch, DEFAULT_BACKEND, STATIC_MODEL)
    assert capsys.readouterr().err == "" and not target.exists()


@pytest.mark.parametrize(
    ("from_image", "expected"),
    [
        (
            "sha256:8f1c20d9a4be0123",
            "vectors   1 embedded, 9 reused (the index grew from sha256:8f1c20d9a4be)\n",
        ),
        (None, "vectors   1 embedded, 9 reused\n"),
    ],
    ids=["from-the-previous-image", "without"],
)
def test_the_bake_summary_says_what_was_embedded_and_what_reused(
    from_image: str | None, expected: str
) -> None:
    summary = BakeSummary(
        tag="my-docs",
        image_id="sha256:b234a31cf282",
        source="./docs",
        size_bytes=None,
        base_image="python:3.12-slim",
        overhead_bytes=None,
        backend=DEFAULT_BACKEND,
        dimension=256,
        chunk_count=10,
        source_count=4,
        content_hash="056ab622a46df4d2",
        skipped=[],
        failed=[],
        chunks_embedded=1,
        chunks_reused=9,
        from_image=from_image,
        build_seconds=31.7,
        verified=False,
        cold_search_seconds=None,
        labels={},
    )
    assert expected in bake_summary_as_text(summary)


@pytest.mark.parametrize(
    ("change", "bundle", "expected"),
    [
        ({"model_fingerprint": "0123456789abcdef"}, False, "other model files for"),
        ({"schema_version": SCHEMA_VERSION - 1}, False, "an older schema (version"),
        ({"schema_version": SCHEMA_VERSION + 1}, False, "a newer schema (version"),
        (
            {"libraries": [LibraryRecord(name="ray", prefix="ray/")]},
            False,
            "it holds a bundle's libraries, and this build indexes one SOURCE",
        ),
        ({"libraries": [LibraryRecord(name="ray", prefix="ray/")]}, True, None),
        ({}, False, None),
    ],
    ids=["model-files", "older-schema", "newer-schema", "bundle", "bundle-to-bundle", "same"],
)
def test_what_a_previous_index_must_share_for_its_vectors_to_be_reused(
    change: dict, bundle: bool, expected: str | None
) -> None:
    fingerprint = fingerprint_directory(STATIC_MODEL)
    built = Manifest(
        backend=DEFAULT_BACKEND,
        model_fingerprint=fingerprint,
        dimension=256,
        tokenizer="duckdb-vectors",
        schema_version=SCHEMA_VERSION,
    )
    why = previous.refusal(built.model_copy(update=change), DEFAULT_BACKEND, fingerprint, bundle)
    assert why == expected if expected is None else expected in why


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "git+file:///srv/repo",
            "git+file:///srv/repo: the build cannot read this machine's files",
        ),
        (
            "git+https://reader:s3cr3t@example.com/org/repo@v1",
            "git+https://example.com/org/repo@v1: a bake takes no credentials",
        ),
        ("ftp://example.com/docs", "ftp://example.com/docs is not a folder, a git+https://"),
    ],
    ids=["a-local-repository", "credentials", "no-such-kind"],
)
def test_a_source_a_build_cannot_fetch_is_refused_before_any_build(
    source: str, expected: str
) -> None:
    result = run_cli("bake", source, "--tag", "never-built", env={"DOCKER_HOST": "unix:///none"})
    assert result.exit_code != 0 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"Error: {expected}")
    assert "s3cr3t" not in result.stderr and "reader" not in result.stderr


# --- the MCP client of bake, against a server on the far end of an attach socket ----------


class Attached:
    """The client's end, as the Docker SDK's attach_socket returns it."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def recv(self, size: int) -> bytes:
        return self._sock.recv(size)

    def fileno(self) -> int:
        return self._sock.fileno()


def frame(stream: int, data: bytes) -> bytes:
    """One frame of the engine's multiplexed stream (1 stdout, 2 stderr)."""
    return struct.pack(">BxxxL", stream, len(data)) + data


@contextmanager
def attached_server(
    serve: Callable[[socket.socket, list[dict]], None],
) -> Iterator[tuple[socket.socket, list[dict]]]:
    """A server thread behind a socket pair; yields the requests it received."""
    client, server = socket.socketpair()
    received: list[dict] = []
    thread = threading.Thread(target=serve, args=(server, received), daemon=True)
    thread.start()
    try:
        yield client, received
    finally:
        client.close()
        thread.join(timeout=10)
        server.close()  # as the engine does once the container is removed


def describe(client: socket.socket, timeout: float = 10) -> engine.McpServerAnswer:
    return anyio.run(engine._describe, engine._AttachedServer(Attached(client)), timeout)


def answer(sock: socket.socket, request: dict, result: dict) -> None:
    reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    sock.sendall(frame(1, json.dumps(reply).encode() + b"\n"))


def test_bake_reads_the_initialize_result_and_every_page_of_tools() -> None:
    def serve(sock: socket.socket, received: list[dict]) -> None:
        lines = sock.makefile("rb")
        for line in lines:
            request = json.loads(line)
            received.append(request)
            if request.get("method") == "initialize":
                info = {"name": "retrieval", "title": "A title", "version": "1"}
                version = request["params"]["protocolVersion"]
                answer(
                    sock,
                    request,
                    {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info},
                )
            elif request.get("method") == "tools/list":
                page = (request.get("params") or {}).get("cursor")
                tool = {"name": "fetch" if page else "search", "inputSchema": {"type": "object"}}
                answer(sock, request, {"tools": [tool]} | ({} if page else {"nextCursor": "2"}))
                if page:
                    return

    with attached_server(serve) as (client, received):
        served = describe(client)
    assert served.initialize["serverInfo"]["title"] == "A title"
    assert [tool["name"] for tool in served.tools] == ["search", "fetch"]
    methods = [request["method"] for request in received]
    assert methods == ["initialize", "notifications/initialized", "tools/list", "tools/list"]
    assert received[0]["params"]["clientInfo"]["name"] == "duckdb-vectors-bake"


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [
        ("exits", "the MCP server exited before answering initialize: Error: no index"),
        ("refuses", "the MCP server refused initialize: unsupported"),
        ("is silent", "the MCP server did not answer initialize within 0.3 s"),
    ],
)
def test_a_server_that_fails_bake_is_one_line(behaviour: str, expected: str) -> None:
    def serve(sock: socket.socket, received: list[dict]) -> None:
        if behaviour == "exits":
            sock.sendall(frame(2, b"Traceback (most recent call last):\nError: no index\n"))
            sock.shutdown(socket.SHUT_WR)
            return
        request = json.loads(sock.makefile("rb").readline())
        if behaviour == "refuses":
            error = {"code": -32602, "message": "unsupported"}
            reply = {"jsonrpc": "2.0", "id": request["id"], "error": error}
            sock.sendall(frame(1, json.dumps(reply).encode() + b"\n"))

    with attached_server(serve) as (client, _), pytest.raises(EngineError) as failed:
        describe(client, timeout=0.3)
    assert str(failed.value) == expected
