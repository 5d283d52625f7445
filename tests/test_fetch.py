"""``fetch``: a document or a hit in context, a page at a time; and the CLI's search budget."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DEFAULT_BACKEND, EVALDATA, STATIC_MODEL

from duckdb_vectors import VectorStore, index_folder
from duckdb_vectors.cli import cli
from duckdb_vectors.errors import UnknownIdError
from duckdb_vectors.fetching import fetch

EXAMPLE_DOCS = Path(__file__).resolve().parent.parent / "examples" / "docs"
PAPER = EVALDATA / "pdfs" / "text" / "CIDR2020-raasveldt-muehleisen-duckdb.pdf"
ENV = {"DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL), "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example docs and a real paper, indexed."""
    folder = tmp_path_factory.mktemp("fetch") / "docs"
    shutil.copytree(EXAMPLE_DOCS, folder)
    shutil.copy(PAPER, folder / "paper.pdf")
    path = folder.parent / "docs.duckdb"
    with VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, folder)
    return path


@pytest.mark.slow
def test_a_pdf_reads_in_page_order_with_page_markers(docs: Path) -> None:
    with VectorStore(docs, read_only=True) as store:
        fetched = fetch(store, "paper.pdf")
        pages = store.document("paper.pdf")
    assert fetched.chunk_ids == [chunk.chunk_id for chunk in pages]
    assert fetched.text.startswith("# paper.pdf\n\n")
    assert "[page 1]" in fetched.text and "[page 2]" in fetched.text
    assert fetched.text.index("[page 1]") < fetched.text.index("[page 2]")


def test_context_reaches_only_into_the_same_document(docs: Path) -> None:
    with VectorStore(docs, read_only=True) as store:
        first = fetch(store, "guides/searching.md#0", context=5)
    assert first.kind == "chunk"
    assert first.chunk_ids == ["guides/searching.md#0", "guides/searching.md#1"]
    assert not first.text.startswith("# ")  # a chunk in context has no document header


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"id": "nowhere.md"}, UnknownIdError, "no chunk or document 'nowhere.md'"),
        ({"id": " "}, ValueError, "id must be a non-empty string: a hit's chunk_id or source"),
        ({"id": "overview.md", "context": 99}, ValueError, "context must be 20 or less, got 99$"),
        ({"id": "overview.md", "context": 1.5}, ValueError, "context must be an integer, got 1.5$"),
        ({"id": "overview.md", "offset": -1}, ValueError, "offset must be 0 or more, got -1$"),
        ({"id": "overview.md", "offset": 10**6}, ValueError, "is past the end of"),
    ],
)
def test_bad_fetches_say_what_to_do(docs: Path, arguments: dict, error: type, message: str):
    with VectorStore(docs, read_only=True) as store, pytest.raises(error, match=message):
        fetch(store, **arguments)


def test_fetch_on_the_command_line_pages_through_a_document(docs: Path) -> None:
    runner = CliRunner()
    whole = runner.invoke(cli, ["fetch", "paper.pdf", "--db", str(docs)], env=ENV)
    assert whole.exit_code == 0 and whole.stderr == ""
    first = runner.invoke(
        cli, ["fetch", "paper.pdf", "--db", str(docs), "--max-tokens", "500"], env=ENV
    )
    assert whole.stdout.startswith(first.stdout.rstrip("\n"))
    assert "more characters: add --offset" in first.stderr
    as_json = runner.invoke(
        cli, ["fetch", "paper.pdf", "--db", str(docs), "--max-tokens", "500", "--json"], env=ENV
    )
    page = json.loads(as_json.stdout)
    assert page["kind"] == "document" and page["next_offset"] == len(page["text"])
    rest = runner.invoke(
        cli,
        ["fetch", "paper.pdf", "--db", str(docs), "--offset", str(page["next_offset"])],
        env=ENV,
    )
    assert page["text"] + rest.stdout == whole.stdout


def test_search_on_the_command_line_keeps_one_hit_per_document_within_a_budget(
    docs: Path,
) -> None:
    arguments = ["search", "search retries", "--db", str(docs), "--top-k", "5", "--json"]
    runner = CliRunner()
    answer = json.loads(runner.invoke(cli, [*arguments, "--one-per-source"], env=ENV).stdout)
    sources = [hit["source"] for hit in answer["results"]]
    assert len(sources) == len(set(sources)) == 5
    small = json.loads(runner.invoke(cli, [*arguments, "--max-tokens", "300"], env=ENV).stdout)
    assert small["left_out"] and len(small["results"]) + len(small["left_out"]) == 5
    refused = runner.invoke(cli, [*arguments, "--max-tokens", "10"], env=ENV)
    assert refused.exit_code == 2 and "--max-tokens" in refused.stderr
