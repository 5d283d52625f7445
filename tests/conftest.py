"""Shared fixtures: real DuckDB files in tmp_path, real model files from ../shared/models."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner, Result
from loguru import logger

from duckdb_vectors import DuckDBVectorsError, VectorStore, get_embedder
from duckdb_vectors.cli import main

REPOSITORY = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("DUCKDB_VECTORS_SHARED", REPOSITORY.parent / "shared"))
MODELS = SHARED / "models"
ONNX_MODEL = MODELS / "onnx-minilm-l6-v2-int8"
EVALDATA = SHARED / "evaldata"
DUCKDB_DOCS = EVALDATA / "docs" / "duckdb" / "docs" / "current"  # the DuckDB docs, Markdown
XQUAD_QUESTIONS = EVALDATA / "ir" / "xquad-r-paragraphs" / "en" / "queries.jsonl"
DEFAULT_BACKEND = "fastembed:minishlab/potion-multilingual-128M"
# A docutils system message as it reads in text ("(INFO/1) No role entry for ..."): never a chunk's.
DOCUTILS_MESSAGE = r"\((?:DEBUG|INFO|WARNING|ERROR|SEVERE)/\d\)"
# The installed console script, for the tests that need a real process.
SCRIPT = shutil.which("duckdb-vectors", path=str(Path(sys.executable).parent))

# The package's settings come from each test alone; the tests' own (where shared/ is, the
# container tests' image names) stay.
for variable in [name for name in os.environ if name.startswith("DUCKDB_VECTORS_")]:
    if variable not in ("DUCKDB_VECTORS_SHARED", "DUCKDB_VECTORS_TEST_IMAGE"):
        del os.environ[variable]


def _static_model(local: Path) -> Path:
    """The default model's files: the local copy in shared/ (machines that cannot reach the
    hub, CI among them), else the copy fastembed downloads, as a user's first run would."""
    if local.is_dir():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing else may wait on the network
        return local
    try:
        return get_embedder(DEFAULT_BACKEND).model_directory()
    except DuckDBVectorsError:
        return local  # missing: the tests that need it are skipped, saying so


STATIC_MODEL = _static_model(MODELS / "static-256-wordllama")
# The packages a runtime image keeps (container/prune_packages.py), lowercase: what search, MCP
# and a runtime append import with any model; what only a transformer model (fastembed's ONNX
# runtime) adds; and what no image keeps (bake and downloads run on the host, hf-xet is removed
# though huggingface_hub asks for it).
SERVING_PACKAGES = {"duckdb", "numpy", "tokenizers", "mcp", "uvicorn", "pydantic-settings"}
CHUNKER_PACKAGES = {"pypdf", "docutils", "selectolax", "pyromark", "pathspec", "pystemmer"}
ONNX_PACKAGES = {"fastembed", "onnxruntime", "pillow"}
NEVER_SERVING = {"docker", "pip", "setuptools", "hf-xet"}
# What a test module (or a fixture) needs from shared/ and the hub, and where it would be.
RESOURCES = {"STATIC_MODEL": STATIC_MODEL, "ONNX_MODEL": ONNX_MODEL, "EVALDATA": EVALDATA}
MODEL_FIXTURES = {"store", "filled_store"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip, with the reason, each test whose model or data is not on this machine; run the
    container tests first."""
    _skip_what_is_missing(items)
    # `make test` hands whole files to its workers (pytest-xdist's loadfile) in this order:
    # the container file takes longest, so it starts first and the other worker takes the rest.
    items.sort(key=lambda item: item.get_closest_marker("container") is None)


def _skip_what_is_missing(items: list[pytest.Item]) -> None:
    missing = {name: path for name, path in RESOURCES.items() if not path.exists()}
    for item in items:
        needed = {name for name in missing if name in vars(item.module)}
        if MODEL_FIXTURES & set(getattr(item, "fixturenames", ())) and "STATIC_MODEL" in missing:
            needed.add("STATIC_MODEL")
        if needed:
            paths = ", ".join(str(missing[name]) for name in sorted(needed))
            reason = f"needs {paths} (set DUCKDB_VECTORS_SHARED; the model can also download)"
            item.add_marker(pytest.mark.skip(reason=reason))


def as_written_by_version_8(connection: duckdb.DuckDBPyConnection) -> None:
    """What schema 8 stored: each term's MD5 halves in ``terms`` (dropped by schema 9)."""
    connection.execute("DELETE FROM schema_migrations WHERE version > 8")
    for column, half in (("digest_high", "upper"), ("digest_low", "lower")):
        connection.execute(f"ALTER TABLE terms ADD COLUMN {column} UBIGINT NOT NULL DEFAULT 0")
        connection.execute(f"ALTER TABLE terms ALTER COLUMN {column} DROP DEFAULT")
        connection.execute(f"UPDATE terms SET {column} = md5_number_{half}(term)")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "vectors.duckdb"


@pytest.fixture
def store(db_path: Path):
    """A read-write store on a new file with the real static model (the default backend)."""
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as opened:
        yield opened


INTRO_TEXTS = [
    "DuckDB is an in-process analytical database management system.",
    "Vectors capture semantic similarity between pieces of text.",
    "Set AWS credentials before calling the S3 API; error E1234 means access denied.",
    "Upgrade to v2.0 for the array_cosine_distance function.",
    "Москва — столица России, крупнейший город страны.",
    "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.",
    "北京是中华人民共和国的首都，也是政治中心。",
    "東京は日本の首都で、データベースの会社が多い。",
]


@pytest.fixture
def filled_store(store: VectorStore) -> VectorStore:
    """The store holding a few texts in several scripts, with metadata to filter on."""
    store.add_texts(
        ids=[f"doc:{i}" for i in range(len(INTRO_TEXTS))],
        texts=INTRO_TEXTS,
        metadatas=[
            {"kind": "intro" if i < 2 else "detail", "year": 2018 + i, "tags": ["t", f"n{i}"]}
            for i in range(len(INTRO_TEXTS))
        ],
        sources=[f"docs/{i // 2}.md" for i in range(len(INTRO_TEXTS))],
    )
    return store


def start_killed_run(
    db_path: Path, folder: Path, marker: Path, midway: int, timeout: float = 120
) -> subprocess.Popen:
    """Start tests/killed_run.py and return once it is midway (``marker`` written), still
    running, ready for the caller's SIGKILL."""
    script = Path(__file__).with_name("killed_run.py")
    arguments = [db_path, folder, marker, STATIC_MODEL, midway, DEFAULT_BACKEND]
    process = subprocess.Popen([sys.executable, str(script), *map(str, arguments)])
    deadline = time.monotonic() + timeout
    while not marker.exists() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.02)
    assert marker.exists(), "the indexer never got midway"
    assert process.poll() is None, "the indexer finished before the kill"
    return process


def run_cli(*arguments: str, env: Mapping[str, str | None] | None = None) -> Result:
    """``duckdb-vectors ARGUMENTS`` in this process, through the console script's own entry
    point (``main``: one-line errors, exit codes), under click's CliRunner: stdout and stderr
    apart, ``env`` (None unsets) for this call only, the model from shared/ unless it says."""
    runner = CliRunner()
    environment = {"DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL), **(env or {})}
    exit_code, exception, exc_info = 0, None, None
    with runner.isolation(env=environment) as streams, _as_the_console_script(arguments):
        try:
            main()
        except SystemExit as done:
            exit_code = done.code if isinstance(done.code, int) else 1
        except Exception as error:  # what --debug lets through, as the interpreter would
            exception, exc_info, exit_code = error, sys.exc_info(), 1
        sys.stdout.flush()
        sys.stderr.flush()
        stdout, stderr, output = (stream.getvalue() for stream in streams)
    return Result(runner, stdout, stderr, output, None, exit_code, exception, exc_info)


@contextmanager
def _as_the_console_script(arguments: tuple[str, ...]) -> Iterator[None]:
    """``main`` reads sys.argv, and configures logging (on a root logger without handlers,
    as a new process has it, so warnings reach this stderr) and loguru: this process gets
    all three back afterwards, so the tests stay independent of each other."""
    root = logging.getLogger()
    saved = sys.argv, root.handlers[:], root.level
    sys.argv, root.handlers[:] = ["duckdb-vectors", *arguments], []
    try:
        yield
    finally:
        sys.argv = saved[0]
        root.handlers[:], root.level = saved[1], saved[2]
        logger.enable("fastembed")  # main disables its logs; loguru enables all by default


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def http_server(
    index: Path, *arguments: str, env: Mapping[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen]]:
    """``duckdb-vectors mcp --transport http`` on a free loopback port in its own process, with
    ``env`` added to its environment; yields its base URL once /health says ready, and kills it
    afterwards, whatever happened."""
    port = free_port()
    command = [SCRIPT, "mcp", "--transport", "http", "--port", str(port), "--db", str(index)]
    environment = {
        "DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL),
        "HF_HUB_OFFLINE": "1",
        **(env or {}),
    }
    process = subprocess.Popen(
        [*command, *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **environment},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while get(f"{base}/health")[0] != 200:
            assert process.poll() is None, process.stderr.read()
            assert time.monotonic() < deadline, "the server did not become ready"
            time.sleep(0.1)
        yield base, process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        process.stdout.close()
        process.stderr.close()


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)
    except OSError:
        return 0, {}
