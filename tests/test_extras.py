"""A verb whose extra is not installed says, in one line, which to install; the core searches
without any of them.

The extras' modules are hidden (``sys.modules[name] = None``: to the import system, as if not
installed), and the console script's entry point runs: in this process, and once in a fresh
one, where nothing was imported before.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ONNX_MODEL, STATIC_MODEL, run_cli

from duckdb_vectors import VectorStore

MINILM = "fastembed:sentence-transformers/all-MiniLM-L6-v2"
CHUNKERS = ["pyromark", "docutils", "selectolax", "pypdf", "pathspec"]
# Every module of every extra: what is left is the core.
EXTRAS = [*CHUNKERS, "fastembed", "onnxruntime", "mcp", "docker", "boto3", "pyarrow", "numkong"]


@pytest.fixture
def hide(monkeypatch: pytest.MonkeyPatch):
    def hidden(*names: str) -> None:
        for name in names:
            monkeypatch.setitem(sys.modules, name, None)

    return hidden


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "page.md").write_text("# Retries\n\nA failed request is retried three times.\n")
    return folder


@pytest.fixture
def index(tmp_path: Path) -> Path:
    db = tmp_path / "vectors.duckdb"
    with VectorStore(db, model_path=STATIC_MODEL) as store:
        store.add_texts(["A failed request is retried three times."], sources=["page.md"])
    return db


def one_line_error(result, expected: str) -> None:
    assert result.exit_code == 1, result.stderr
    assert result.stderr == f"Error: {expected}\n"


def test_search_needs_no_extra(index: Path, hide) -> None:
    hide(*EXTRAS)
    result = run_cli("search", "retried", "--db", str(index), "--json")
    assert result.exit_code == 0, result.stderr
    assert '"source": "page.md"' in result.stdout


@pytest.mark.slow
def test_a_fresh_process_searches_with_the_core_alone(index: Path) -> None:
    """Nothing imported before: no module of the core imports an extra as it loads."""
    script = f"import sys\nfor name in {EXTRAS!r}: sys.modules[name] = None\n"
    script += "from duckdb_vectors.cli import main\nmain()\n"
    result = subprocess.run(
        [sys.executable, "-c", script, "search", "retried", "--db", str(index), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL)},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert '"source": "page.md"' in result.stdout


def test_index_without_the_chunkers_names_the_index_extra(docs: Path, tmp_path: Path, hide) -> None:
    hide("pyromark")
    result = run_cli("index", str(docs), "--db", str(tmp_path / "v.duckdb"))
    one_line_error(result, "indexing a source needs pyromark: pip install 'duckdb-vectors[index]'")
    assert not (tmp_path / "v.duckdb").exists()


def test_mcp_without_the_sdk_names_the_mcp_extra(index: Path, hide) -> None:
    hide("mcp")
    result = run_cli("mcp", "--db", str(index))
    one_line_error(result, "serving MCP needs mcp: pip install 'duckdb-vectors[mcp]'")


@pytest.mark.parametrize(
    ("arguments", "what"),
    [
        (["bake", "docs", "--tag", "never-built"], "bake"),
        (["inspect", "never-built"], "inspect"),
        (["skill", "--image", "never-built", "--stdout"], "a skill for an image"),
    ],
)
def test_the_container_verbs_without_the_docker_sdk_name_the_bake_extra(
    arguments: list[str], what: str, hide
) -> None:
    hide("docker")
    result = run_cli(*arguments)
    one_line_error(result, f"{what} needs docker: pip install 'duckdb-vectors[bake]'")


def test_a_transformer_backend_without_fastembed_names_the_onnx_extra(
    docs: Path, tmp_path: Path, hide
) -> None:
    hide("fastembed", "onnxruntime")
    db = str(tmp_path / "v.duckdb")
    result = run_cli(
        "index", str(docs), "--db", db, "--backend", MINILM, "--model-path", str(ONNX_MODEL)
    )
    one_line_error(
        result,
        f"{MINILM} needs fastembed (to download the model, or to run a transformer):"
        " pip install 'duckdb-vectors[onnx]'",
    )
