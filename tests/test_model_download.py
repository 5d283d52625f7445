"""The core install (no fastembed) downloads a static model with the hub client alone, into
fastembed's cache layout, and reads a transformer's config only, to say it needs ``onnx``.

The Hugging Face hub is a cloud service this machine cannot reach: a loopback server answers
its file-resolve endpoint (``HEAD``/``GET /{repo}/resolve/{revision}/{file}``, with the commit
and ETag headers the hub sends) with real model files, and the real hub client talks to it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from conftest import STATIC_MODEL

from duckdb_vectors import VectorStore

DEFAULT_REPO = "minishlab/potion-multilingual-128M"
TRANSFORMER_REPO = "sentence-transformers/all-MiniLM-L6-v2"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


class Hub:
    """Serves ``repos`` ({repo: {file: bytes}}) as the hub's resolve endpoint; logs requests."""

    def __init__(self, repos: dict[str, dict[str, bytes]]) -> None:
        self.repos = repos
        self.requested: list[str] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def do_GET(self) -> None:
                self._answer(body=True)

            def _answer(self, body: bool) -> None:
                repo, _, rest = self.path.lstrip("/").partition("/resolve/")
                name = rest.partition("/")[2]
                data = hub.repos.get(repo, {}).get(name)
                if body and rest:  # the hub client's other calls are not downloads
                    hub.requested.append(f"{repo}/{name}")
                if data is None:
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data)

        return Handler

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    static = {path.name: path.read_bytes() for path in STATIC_MODEL.iterdir() if path.is_file()}
    transformer = {"config.json": json.dumps({"model_type": "bert"}).encode()}
    served = Hub({DEFAULT_REPO: static, TRANSFORMER_REPO: transformer})
    try:
        yield served
    finally:
        served.close()


def core_cli(hub: Hub, cache: Path, *arguments: str, offline: bool = False) -> CompletedProcess:
    """The console script in a fresh process of the core install (fastembed as if not
    installed), with the loopback hub as its Hugging Face endpoint and ``cache`` as its models'."""
    hidden = "import sys\nfor name in ('fastembed', 'onnxruntime'): sys.modules[name] = None\n"
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DUCKDB_VECTORS_", "HF_"))
    }
    environment |= {"HF_ENDPOINT": hub.url, "FASTEMBED_CACHE_PATH": str(cache)}
    if offline:
        environment["HF_HUB_OFFLINE"] = "1"
    script = hidden + "from duckdb_vectors.console import main\nmain()\n"
    return subprocess.run(
        [sys.executable, "-c", script, *arguments],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


@pytest.fixture
def index(tmp_path: Path) -> Path:
    db = tmp_path / "vectors.duckdb"
    with VectorStore(db, model_path=STATIC_MODEL) as store:
        store.add_texts(["A failed request is retried three times."], sources=["page.md"])
    return db


def index_with(hub: Hub, backend: str, folder: Path) -> CompletedProcess:
    docs = folder / "docs"
    docs.mkdir()
    (docs / "page.md").write_text("# Retries\n\nA failed request is retried three times.\n")
    db = str(folder / "new.duckdb")
    return core_cli(hub, folder / "models", "index", str(docs), "--db", db, "--backend", backend)


def test_the_core_downloads_the_default_static_model_once(
    hub: Hub, index: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "models"
    result = core_cli(hub, cache, "search", "retried", "--db", str(index), "--json")
    assert result.returncode == 0, result.stderr
    assert '"source": "page.md"' in result.stdout
    assert "downloading model minishlab/potion-multilingual-128M" in result.stderr
    assert sorted(hub.requested) == [
        f"{DEFAULT_REPO}/{name}" for name in ("config.json", "model.safetensors", "tokenizer.json")
    ]
    hub.close()  # the next run finds it in the cache
    again = core_cli(hub, cache, "search", "retried", "--db", str(index), "--json", offline=True)
    assert again.returncode == 0, again.stderr
    assert again.stdout == result.stdout and "downloading" not in again.stderr


def test_a_transformer_without_fastembed_reads_its_config_only(hub: Hub, tmp_path: Path) -> None:
    backend = f"fastembed:{TRANSFORMER_REPO}"
    result = index_with(hub, backend, tmp_path)
    assert result.returncode == 1
    assert result.stderr == (
        f"Error: {backend} needs fastembed (to download the model, or to run a transformer):"
        " pip install 'duckdb-vectors[onnx]'\n"
    )
    assert hub.requested == [f"{TRANSFORMER_REPO}/config.json"]


def test_a_model_the_hub_does_not_have_is_one_line(hub: Hub, tmp_path: Path) -> None:
    backend = "fastembed:nobody/no-such-model"
    result = index_with(hub, backend, tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: cannot download nobody/no-such-model for {backend}: ")
    assert result.stderr.count("\n") == 1 and "DUCKDB_VECTORS_MODEL_PATH" in result.stderr
    assert not (tmp_path / "new.duckdb").exists()
