"""``index --from-parquet`` / ``index_parquet``: real Parquet files written by DuckDB's COPY,
embedded with the hashing backend (no model files, no network), imported into real indexes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pytest
from conftest import run_cli

from duckdb_vectors import index_parquet, parquet_import
from duckdb_vectors.embedders import get_embedder
from duckdb_vectors.errors import DuckDBVectorsError
from duckdb_vectors.models import Chunk
from duckdb_vectors.store import VectorStore

BACKEND = "hashing:256"
TEXTS = {
    "a": "DuckDB reads Parquet files with its own reader.",
    "b": "Ducks swim in the pond behind the barn.",
    "c": "Spark jobs embed millions of chunks overnight.",
    "d": "Ray actors batch the embedding model on GPUs.",
}


def embed(texts: list[str]) -> np.ndarray:
    return get_embedder(BACKEND, None, None).embed(texts)


def write_parquet(path: Path, texts: dict[str, str], *, vectors: np.ndarray | None = None) -> Path:
    """Rows chunk_id, text, embedding, title, source, position, metadata, as a job would."""
    vectors = embed(list(texts.values())) if vectors is None else vectors
    with duckdb.connect() as connection:
        connection.execute(
            "CREATE TABLE rows (chunk_id VARCHAR, text VARCHAR, embedding FLOAT[], title VARCHAR,"
            " source VARCHAR, position INTEGER, metadata VARCHAR)"
        )
        connection.executemany(
            "INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                [key, text, vector.tolist(), f"Title {key}", f"doc-{key}.md", 0, '{"k": 1}']
                for (key, text), vector in zip(texts.items(), vectors, strict=True)
            ],
        )
        connection.execute(f"COPY rows TO '{path}' (FORMAT parquet)")
    return path


@pytest.fixture
def parquet_store(tmp_path: Path):
    with VectorStore(tmp_path / "index.duckdb", BACKEND, read_only=False) as store:
        yield store


def test_import_is_searchable_by_vector_and_text(tmp_path: Path, parquet_store: VectorStore):
    file = write_parquet(tmp_path / "rows.parquet", TEXTS)
    summary = index_parquet(parquet_store, file)
    assert (summary.files, summary.rows, summary.chunks_added) == (1, 4, 4)
    vector = embed([TEXTS["c"]])[0]
    assert parquet_store.query_vectors(vector, top_k=1)[0].chunk.chunk_id == "c"
    hit = parquet_store.query_text("ducks pond", top_k=1)[0].chunk
    assert (hit.chunk_id, hit.title, hit.source, hit.metadata) == (
        "b",
        "Title b",
        "doc-b.md",
        {"k": 1},
    )
    assert parquet_store.manifest.dimension == 256


@pytest.mark.slow
def test_reimport_writes_only_what_changed(tmp_path: Path, parquet_store: VectorStore):
    file = write_parquet(tmp_path / "rows.parquet", TEXTS)
    index_parquet(parquet_store, file)
    again = index_parquet(parquet_store, file)
    assert (again.chunks_added, again.chunks_updated, again.chunks_unchanged) == (0, 0, 4)
    changed = {**TEXTS, "b": "Geese swim in the lake beyond the field."}
    write_parquet(file, changed)
    summary = index_parquet(parquet_store, file)
    assert (summary.chunks_updated, summary.chunks_unchanged) == (1, 3)
    assert parquet_store.query_text("geese lake", top_k=1)[0].chunk.chunk_id == "b"
    assert not parquet_store.query_text("barn")


def test_source_prefix_owns_its_scope(tmp_path: Path, parquet_store: VectorStore):
    file = write_parquet(tmp_path / "rows.parquet", TEXTS)
    index_parquet(parquet_store, file, source_prefix="job/")
    write_parquet(file, {key: TEXTS[key] for key in ("a", "b")})
    summary = index_parquet(parquet_store, file, source_prefix="job/")
    assert summary.chunks_pruned == 2
    assert sorted(parquet_store.sources()) == ["job/doc-a.md", "job/doc-b.md"]


def test_without_source_prefix_is_a_pure_upsert(tmp_path: Path, parquet_store: VectorStore):
    index_parquet(parquet_store, write_parquet(tmp_path / "one.parquet", TEXTS))
    index_parquet(parquet_store, write_parquet(tmp_path / "two.parquet", {"e": "Another row."}))
    assert parquet_store.count() == 5


def test_a_glob_reads_every_matching_file(tmp_path: Path, parquet_store: VectorStore):
    items = list(TEXTS.items())
    write_parquet(tmp_path / "part-0.parquet", dict(items[:2]))
    write_parquet(tmp_path / "part-1.parquet", dict(items[2:]))
    summary = index_parquet(parquet_store, tmp_path / "part-*.parquet")
    assert (summary.files, summary.chunks_added) == (2, 4)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ("chunk_id, text", "has no embedding column"),
        ("chunk_id, 42 AS text, embedding", "column text is INTEGER"),
        ("chunk_id, text, embedding[1:8] AS embedding", "has a 8-dimensional embedding"),
        ("NULL::VARCHAR AS chunk_id, text, embedding", "a row has no chunk_id"),
        ("chunk_id, text, ['nan'::FLOAT] || embedding[2:] AS embedding", "NaN"),
        ("chunk_id, text, embedding, '[1]' AS metadata", "metadata must hold JSON objects"),
    ],
)
def test_bad_files_are_one_line_naming_the_file(
    tmp_path: Path, parquet_store: VectorStore, columns: str, message: str
):
    good = write_parquet(tmp_path / "good.parquet", TEXTS)
    bad = tmp_path / "bad.parquet"
    with duckdb.connect() as connection:
        connection.execute(
            f"COPY (SELECT {columns} FROM read_parquet('{good}')) TO '{bad}' (FORMAT parquet)"
        )
    with pytest.raises(DuckDBVectorsError, match=message) as raised:
        index_parquet(parquet_store, bad)
    assert str(bad) in str(raised.value) and "\n" not in str(raised.value)
    assert parquet_store.count() == 0


def test_an_import_writes_what_put_vectors_and_chunks_write(tmp_path: Path):
    """Parquet rows and ``put_vectors`` items are planned column by column, ``Chunk`` objects
    one by one: the same rows must give the same index (ids, etags, fields and postings)."""
    file = write_parquet(tmp_path / "rows.parquet", TEXTS)
    rows = duckdb.execute(f"SELECT * FROM read_parquet('{file}') ORDER BY chunk_id").fetchall()
    vectors = np.asarray([row[2] for row in rows], dtype=np.float32)
    fields = [
        {"chunk_id": row[0], "text": row[1], "title": row[3], "source": row[4],
         "position": row[5], "metadata": json.loads(row[6])}
        for row in rows
    ]  # fmt: skip
    writes = {
        "parquet": lambda store: index_parquet(store, file),
        "put_vectors": lambda store: store.put_vectors(
            [
                {"key": f["chunk_id"], "data": {"float32": vector}, **f}
                for f, vector in zip(fields, vectors, strict=True)
            ]
        ),
        "chunks": lambda store: store.put_vector_batches(
            [([Chunk(**f) for f in fields], vectors)], datetime.now(UTC)
        ),
    }
    built = {}
    for name, write in writes.items():
        with VectorStore(tmp_path / f"{name}.duckdb", BACKEND) as store:
            write(store)
            stored = store.connection.execute(
                "SELECT chunk_id, text, title, source, position, metadata, etag, token_count"
                " FROM chunks ORDER BY chunk_id"
            ).fetchall()
            postings = store.connection.execute(
                "SELECT c.chunk_id, t.term, p.tf FROM postings p JOIN terms t USING (term_id)"
                " JOIN chunks c USING (key) ORDER BY ALL"
            ).fetchall()
            built[name] = (store.manifest.content_hash, stored, postings)
    assert built["parquet"] == built["put_vectors"] == built["chunks"]
    assert len(built["parquet"][2]) > 20


def test_an_id_repeated_in_the_files_is_refused(tmp_path: Path, parquet_store: VectorStore):
    write_parquet(tmp_path / "part-0.parquet", TEXTS)
    write_parquet(tmp_path / "part-1.parquet", {"b": "Again."})
    with pytest.raises(ValueError, match=r"duplicate ids in one write: \['b'\]"):
        index_parquet(parquet_store, tmp_path / "part-*.parquet")
    assert parquet_store.count() == 0


def test_no_matching_file(tmp_path: Path, parquet_store: VectorStore):
    with pytest.raises(DuckDBVectorsError, match="no Parquet file matches"):
        index_parquet(parquet_store, tmp_path / "none-*.parquet")


@pytest.mark.slow
def test_cli_summary_json_and_errors(tmp_path: Path):
    file = write_parquet(tmp_path / "rows.parquet", TEXTS)
    db = str(tmp_path / "cli.duckdb")
    new_without_backend = run_cli("index", "--from-parquet", str(file), "--db", db)
    assert new_without_backend.exit_code == 2 and "--backend" in new_without_backend.stderr
    assert not Path(db).exists()
    done = run_cli("index", "--from-parquet", str(file), "--db", db, "--backend", BACKEND)
    assert done.exit_code == 0, done.stderr
    assert "chunks  4 added, 0 updated, 0 unchanged, 0 pruned" in done.stdout
    again = run_cli("index", "--from-parquet", str(file), "--db", db, "--json")
    assert json.loads(again.stdout)["chunks_unchanged"] == 4
    wrong = run_cli("index", "--from-parquet", str(tmp_path / "x*.parquet"), "--db", db)
    assert wrong.exit_code == 1 and wrong.stderr.count("\n") == 1
    both = run_cli("index", str(tmp_path), "--from-parquet", str(file), "--db", db)
    assert both.exit_code == 2


def test_progress_counts_rows_when_asked(tmp_path: Path):
    """A build log gets plain lines (a terminal gets a bar); the last one only once done."""
    file = write_parquet(tmp_path / "rows.parquet", TEXTS)
    db = str(tmp_path / "cli.duckdb")
    quiet = run_cli("index", "--from-parquet", str(file), "--db", db, "--backend", BACKEND)
    assert quiet.exit_code == 0 and "importing" not in quiet.stderr
    shown = run_cli("index", "--from-parquet", str(file), "--db", db, "--progress")
    assert shown.exit_code == 0, shown.stderr
    assert shown.stderr.splitlines()[-1] == "importing: 4/4 rows"
    assert "importing" not in shown.stdout


def test_the_files_are_read_without_duckdbs_own_progress_bar() -> None:
    """DuckDB draws a bar on stderr once a scan runs 2 s, and the files' scan lasts the whole
    import: it would land in build logs even with --no-progress."""
    with parquet_import.reader_connection() as reader:
        setting = reader.execute("SELECT current_setting('enable_progress_bar')").fetchall()
    assert setting == [(False,)]
