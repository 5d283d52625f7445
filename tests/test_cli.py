"""The ``duckdb-vectors`` command against real indexes.

Most tests run it in this process (conftest.run_cli: click's CliRunner around the console
script's ``main``). A few run the installed script in a subprocess, for what only a real
process shows: its startup (logging, the hub's offline settings, loguru), a lock held by
another process, and a terminal (see "The installed console script" below).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SCRIPT, STATIC_MODEL, run_cli

from duckdb_vectors import DuckDBVectorsError, VectorStore


def run(*arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The installed console script in a new process."""
    environment = {**os.environ, "DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL), **(env or {})}
    return subprocess.run(
        [SCRIPT, *arguments], capture_output=True, text=True, env=environment, timeout=120
    )


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small docs folder indexed by the CLI itself."""
    root = tmp_path_factory.mktemp("cli")
    docs = root / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "guides" / "retries.md").write_text(
        "# Retries\n\nFailed requests are retried three times with backoff.\n"
    )
    (docs / "errors.md").write_text(
        "---\nkind: reference\n---\n# Errors\n\nError E1234 means the API key is missing.\n"
    )
    (docs / "notes.txt").write_text("Plain notes about the embedded analytical database.\n")
    (docs / "broken.md").write_bytes(b"\x00\x01binary")
    db = root / "docs.duckdb"
    result = run_cli("index", str(docs), "--db", str(db), "--json")
    assert result.exit_code == 0, result.stderr
    return db


def test_index_prints_a_json_summary_and_reports_bad_files_on_stderr(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha text\n")
    (docs / "bad.md").write_bytes(b"\x00binary")
    result = run_cli("index", str(docs), "--db", str(tmp_path / "x.duckdb"), "--json")
    assert result.exit_code == 0
    summary = json.loads(result.stdout)
    assert summary["files_new"] == 1 and summary["chunks_added"] == 1
    assert summary["skipped"] == [
        {"source": "bad.md", "reason": "binary file (application/octet-stream)"}
    ]
    assert "bad.md: skipped: binary file" in result.stderr
    again = json.loads(
        run_cli("index", str(docs), "--db", str(tmp_path / "x.duckdb"), "--json").stdout
    )
    assert again["chunks_embedded"] == 0 and again["files_unchanged"] == 1


def test_index_in_text_form(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha text\n")
    result = run_cli("index", str(docs), "--db", str(tmp_path / "x.duckdb"))
    assert result.exit_code == 0
    assert "files   1 seen: 1 new" in result.stdout
    assert "chunks  1 added" in result.stdout


def test_index_records_the_bm25_share_it_is_given(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha text\n")
    db = tmp_path / "x.duckdb"
    assert run_cli("index", str(docs), "--db", str(db), "--lexical-weight", "0.4").exit_code == 0
    with VectorStore(db, read_only=True) as store:
        assert store.manifest is not None and store.manifest.lexical_weight == 0.4
    refused = run_cli("index", str(docs), "--db", str(db), "--lexical-weight", "1.5")
    assert refused.exit_code == 2 and "--lexical-weight" in refused.stderr


def test_index_of_a_folder_with_nothing_indexable_fails(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli("index", str(empty), "--db", str(tmp_path / "x.duckdb"))
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1].startswith("Error: nothing was indexed from")


def test_search_json(indexed: Path) -> None:
    result = run_cli("search", "how often are requests retried?", "--db", str(indexed), "--json")
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["query"] == "how often are requests retried?"
    first = payload["results"][0]
    assert first["source"] == "guides/retries.md" and first["rank"] == 1
    assert first["title"] == "Retries" and "three times" in first["text"]
    assert set(first) == {
        "rank",
        "score",
        "chunk_id",
        "source",
        "title",
        "position",
        "uri",
        "url",
        "text",
        "metadata",
        "vector_rank",
        "text_rank",
    }
    assert result.stderr == ""


def test_search_text_output_and_options(indexed: Path) -> None:
    result = run_cli("search", "E1234", "--db", str(indexed), "--top-k", "1")
    assert result.exit_code == 0
    assert result.stdout.startswith("1. [") and "errors.md | Errors" in result.stdout
    filtered = run_cli(
        "search", "requests", "--db", str(indexed), "--json", "--filter", '{"kind": "reference"}'
    )
    assert {r["source"] for r in json.loads(filtered.stdout)["results"]} == {"errors.md"}
    vector_only = json.loads(
        run_cli("search", "database", "--db", str(indexed), "--json", "--vector-only").stdout
    )
    assert all(r["text_rank"] is None for r in vector_only["results"])
    text_only = json.loads(
        run_cli("search", "E1234", "--db", str(indexed), "--json", "--text-only").stdout
    )
    assert [r["source"] for r in text_only["results"]] == ["errors.md"]
    scoped = json.loads(
        run_cli(
            "search",
            "requests",
            "--db",
            str(indexed),
            "--json",
            "--where",
            "source LIKE 'guides/%'",
        ).stdout
    )
    assert {r["source"] for r in scoped["results"]} == {"guides/retries.md"}


def test_report_json_reads_no_model(indexed: Path) -> None:
    result = run_cli(
        "report", "--db", str(indexed), "--json", env={"DUCKDB_VECTORS_MODEL_PATH": "/nonexistent"}
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["chunk_count"] == 3 and report["dimension"] == 256
    assert report["sources"] == {"errors.md": 1, "guides/retries.md": 1, "notes.txt": 1}
    assert report["manifest"]["content_hash"] and report["file_size_bytes"] > 0
    text = run_cli("report", "--db", str(indexed)).stdout
    assert "chunks      3" in text and "guides/retries.md" in text


def test_environment_configures_the_cli(indexed: Path) -> None:
    result = run_cli("search", "E1234", "--json", env={"DUCKDB_VECTORS_DB_PATH": str(indexed)})
    assert json.loads(result.stdout)["results"][0]["source"] == "errors.md"


def test_search_match_all_in_json_and_its_fallback_in_text(indexed: Path) -> None:
    every = run_cli("search", "retried backoff", "--db", str(indexed), "--match", "all", "--json")
    payload = json.loads(every.stdout)
    assert payload["match"] == "all"
    assert [hit["source"] for hit in payload["results"]] == ["guides/retries.md"]
    assert (
        json.loads(run_cli("search", "E1234", "--db", str(indexed), "--json").stdout)["match"]
        == "any"
    )
    fallback = run_cli("search", "retried E1234", "--db", str(indexed), "--match", "all")
    assert fallback.exit_code == 0, fallback.stderr
    assert fallback.stdout.startswith("[No chunk has every query term;")
    assert "guides/retries.md" in fallback.stdout and "errors.md" in fallback.stdout
    text_only = run_cli(
        "search", "retried E1234", "--db", str(indexed), "--match", "all", "--text-only", "--json"
    )
    assert json.loads(text_only.stdout)["match"] == "any (no chunk has every term)"


@pytest.mark.parametrize(
    ("arguments", "code", "message"),
    [
        (["search", "x", "--db", "missing.duckdb"], 1, "does not exist; build an index first"),
        (["search", "x", "--filter", "{bad"], 2, "--filter is not valid JSON"),
        (["search", "x", "--filter", '{"a": {"$regex": "x"}}'], 2, "unknown operator '$regex'"),
        (["search", "x", "--where", "1); DROP TABLE chunks; --"], 2, "where:"),
        (["search", "x", "--backend", "hashing"], 1, "was built with backend"),
        (["search", "x", "--top-k", "0"], 2, "Invalid value for '--top-k'"),
        (["search", "x", "--vector-only", "--text-only"], 2, "exclude each other"),
        (["search", "x", "--match", "most"], 2, "Invalid value for '--match'"),
        (["search", "   "], 2, "non-empty string"),
        (["index", "/definitely/not/here"], 1, "is not a folder"),
    ],
)
def test_errors_are_one_line_with_an_exit_code(indexed: Path, arguments, code, message) -> None:
    if "--db" not in arguments and arguments[0] == "search":
        arguments = [*arguments, "--db", str(indexed)]
    result = run_cli(*arguments)
    assert result.exit_code == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert message in lines[-1]
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_debug_lets_the_error_through_for_its_traceback() -> None:
    result = run_cli("--debug", "search", "x", "--db", "missing.duckdb")
    assert isinstance(result.exception, DuckDBVectorsError)  # the interpreter prints it
    assert "does not exist" in str(result.exception) and "Error:" not in result.stderr


@pytest.mark.parametrize("verb", ["index", "report", "search", "mcp", "eval"])
def test_every_verb_has_help_with_an_example(verb: str) -> None:
    result = run_cli(verb, "--help")
    assert result.exit_code == 0
    usage, examples = result.stdout.split("Examples:")
    assert usage.startswith("Usage: ") and f" {verb} [OPTIONS]" in usage.splitlines()[0]
    example = f"duckdb-vectors {verb} "
    assert any(line.strip().startswith(example) for line in examples.splitlines())


def test_the_text_report_lists_at_most_fifty_sources() -> None:
    from duckdb_vectors import IndexReport
    from duckdb_vectors.rendering import report_as_text

    sources = {f"doc{i:03d}.md": 1 for i in range(120)}
    report = IndexReport(
        db_path="x.duckdb",
        file_size_bytes=1,
        backend="hashing",
        dimension=8,
        chunk_count=120,
        sources=sources,
        manifest=None,
    )
    text = report_as_text(report)
    assert "doc049.md" in text and "doc050.md" not in text
    assert text.endswith("... and 70 more (see --json)")


def test_a_failed_first_run_leaves_no_index_and_an_empty_index_says_so(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha text\n")
    db = tmp_path / "first.duckdb"
    failed = run_cli(
        "index", str(docs), "--db", str(db), env={"DUCKDB_VECTORS_MODEL_PATH": str(docs)}
    )
    assert failed.exit_code == 1 and not db.exists()
    missing = run_cli("search", "alpha", "--db", str(db))
    assert "does not exist; build an index first" in missing.stderr
    with VectorStore(db, model_path=STATIC_MODEL) as store:
        store.add_texts(["soon gone"], ids=["x"])
        store.delete_vectors(["x"])
    empty = run_cli("search", "alpha", "--db", str(db))
    assert empty.exit_code == 1
    assert empty.stderr.strip() == (
        f"Error: {db} is empty: index documents into it first (duckdb-vectors index SOURCE"
        f" --db {db})"
    )


# -- The installed console script, in a process of its own -----------------------------------
# Kept end to end: its stream setup at startup; the hub's offline settings and fastembed's
# loguru sink, fixed at import; a lock another process holds (one process shares its own);
# and a terminal for the progress bar.


@pytest.mark.slow
def test_the_installed_script_writes_results_to_stdout_and_the_rest_to_stderr(
    tmp_path: Path,
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha text\n")
    (docs / "bad.md").write_bytes(b"\x00binary")
    result = run("index", str(docs), "--db", str(tmp_path / "x.duckdb"), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["files_new"] == 1
    assert result.stderr.strip() == "bad.md: skipped: binary file (application/octet-stream)"


@pytest.mark.slow
def test_a_model_that_cannot_be_loaded_is_one_line(indexed: Path, tmp_path: Path) -> None:
    """No local model and no network: fastembed's own log lines stay out of the way."""
    environment = {
        key: value for key, value in os.environ.items() if key != "DUCKDB_VECTORS_MODEL_PATH"
    }
    empty = str(tmp_path)
    environment.update(HF_HUB_OFFLINE="1", FASTEMBED_CACHE_PATH=empty, HF_HOME=empty)
    result = subprocess.run(
        [SCRIPT, "search", "retries", "--db", str(indexed)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith("Error: cannot load model")
    assert "DUCKDB_VECTORS_MODEL_PATH" in result.stderr


@pytest.mark.slow
def test_a_locked_index_is_a_clear_error(indexed: Path) -> None:
    writer = VectorStore(indexed, model_path=STATIC_MODEL)  # holds the write lock
    try:
        result = run("search", "x", "--db", str(indexed))
    finally:
        writer.close()
    assert result.returncode == 1
    assert "is locked: another process (PID" in result.stderr
    assert "has it open for writing" in result.stderr


# What indexing, publishing, serving and baking need: a search never imports it.
NOT_FOR_SEARCH = (
    "duckdb_vectors.chunkers",
    "duckdb_vectors.indexer",
    "duckdb_vectors.parquet_import",
    "duckdb_vectors.evaluation",
    "duckdb_vectors.serve.mcp_server",
    "duckdb_vectors.container",
    "mcp",
    "docker",
    "docutils",
)
# What fastembed brings (the ONNX runtime; httpx and filelock with the hub client): only a
# transformer needs it, not a search with a static model (~0.45 s and ~55 MB of RSS).
FASTEMBED_MODULES = ("fastembed", "onnxruntime", "httpx", "filelock")
# What a static model needs: not a text-only search.
STATIC_MODEL_MODULES = ("tokenizers",)
MODULES_AFTER = """
import json, sys
from duckdb_vectors.cli import main
sys.argv = ["duckdb-vectors", *sys.argv[1:]]
main()
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def modules_after_search(*arguments: str) -> set[str]:
    """The modules a one-shot ``search`` process has imported by the time it answered."""
    environment = {**os.environ, "DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL)}
    result = subprocess.run(
        [sys.executable, "-c", MODULES_AFTER, "search", *arguments],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "Retries" in result.stdout
    return set(json.loads(result.stderr.strip().splitlines()[-1]))


def imported(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    """The modules of ``packages`` (each a package or module name) among ``modules``."""
    return sorted(m for m in modules if any(m == p or m.startswith(f"{p}.") for p in packages))


@pytest.mark.slow
def test_a_search_imports_only_what_searching_needs(indexed: Path) -> None:
    """A one-shot search pays for its imports on every run: the indexer's chunkers, the HTTP
    client, the MCP server and the Docker SDK stay out, a text-only search loads no model, and
    a static model is embedded without fastembed and onnxruntime."""
    text_only = modules_after_search("retries", "--db", str(indexed), "--text-only")
    assert imported(text_only, NOT_FOR_SEARCH + FASTEMBED_MODULES + STATIC_MODEL_MODULES) == []
    hybrid = modules_after_search("retries", "--db", str(indexed))
    assert "tokenizers" in hybrid  # the check sees what a search really imported
    assert imported(hybrid, NOT_FOR_SEARCH + FASTEMBED_MODULES) == []


@pytest.mark.slow
def test_files_are_reported_once_and_never_onto_the_progress_bar(tmp_path: Path) -> None:
    """On a terminal the bar is redrawn below each warning; the summary counts, not lists."""
    import fcntl
    import pty
    import struct
    import termios

    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.md", "c.md"):
        (docs / name).write_text(f"# {name}\n\nsome text\n")
    (docs / "b.md").write_bytes(b"\x00binary")
    terminal, stderr_end = pty.openpty()
    rows_columns = struct.pack("HHHH", 24, 100, 0, 0)  # a terminal has a size; tqdm reads it
    fcntl.ioctl(stderr_end, termios.TIOCSWINSZ, rows_columns)
    environment = {**os.environ, "DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL)}
    result = subprocess.run(
        [SCRIPT, "index", str(docs), "--db", str(tmp_path / "x.duckdb")],
        stdout=subprocess.PIPE,
        stderr=stderr_end,
        text=True,
        env=environment,
        timeout=120,
    )
    os.close(stderr_end)
    drawn = b""
    with contextlib.suppress(OSError):  # the pty reports EIO once it is drained
        while chunk := os.read(terminal, 65536):
            drawn += chunk
    os.close(terminal)
    segments = re.split(r"[\r\n]+", drawn.decode(errors="replace"))
    warnings = [segment for segment in segments if "b.md: skipped" in segment]
    assert warnings and not any("indexing" in segment for segment in warnings)
    assert any("indexing" in segment for segment in segments)  # the bar was drawn
    assert "b.md" not in result.stdout and "1 skipped" in result.stdout
