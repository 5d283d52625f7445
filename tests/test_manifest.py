"""The manifest records what built an index; a mismatching model is refused, never misused."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import numpy as np
import pytest
from conftest import DEFAULT_BACKEND, STATIC_MODEL

from duckdb_vectors import IndexMismatchError, NotAnIndexError, VectorStore
from duckdb_vectors.embedders import BaseEmbedder, fingerprint_directory
from duckdb_vectors.index.schema import MIGRATIONS, SCHEMA_VERSION
from duckdb_vectors.index.terms import TOKENIZER_NAME
from duckdb_vectors.writes import WRITE_BATCH


def build(path: Path, texts: list[str], **options) -> VectorStore:
    store = VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL, **options)
    store.add_texts(texts, ids=[f"id{i}" for i in range(len(texts))])
    return store


def test_manifest_records_model_dimension_versions_and_content(db_path: Path) -> None:
    with build(db_path, ["one", "two", "three"]) as store:
        manifest = store.manifest
    assert manifest.backend == DEFAULT_BACKEND
    assert manifest.dimension == 256
    assert manifest.model_fingerprint == fingerprint_directory(STATIC_MODEL)
    assert manifest.chunk_count == 3
    assert len(manifest.content_hash) == 64
    assert manifest.duckdb_version == duckdb.__version__
    assert manifest.tokenizer == TOKENIZER_NAME == "words-v3"
    assert manifest.built_at >= manifest.created_at


@pytest.mark.slow
def test_manifest_is_read_without_loading_a_model(db_path: Path, tmp_path: Path) -> None:
    build(db_path, ["one"]).close()
    # No model path and an empty cache: any attempt to load the model would fail.
    with VectorStore(db_path, read_only=True, cache_dir=tmp_path / "empty") as store:
        assert store.manifest.chunk_count == 1
        assert store.count() == 1 and store.sources() == {"": 1}


@pytest.mark.slow
def test_content_hash_depends_on_content_not_on_order_or_time(tmp_path: Path) -> None:
    with build(tmp_path / "a.duckdb", ["x", "y"]) as first:
        first_hash = first.manifest.content_hash
    with VectorStore(tmp_path / "b.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as second:
        second.add_texts(["y"], ids=["id1"])
        second.add_texts(["x"], ids=["id0"])
        assert second.manifest.content_hash == first_hash
        second.add_texts(["z"], ids=["id0"])
        assert second.manifest.content_hash != first_hash
        second.add_texts(["x"], metadatas=[{"lang": "en"}], ids=["id0"])
        with_metadata = second.manifest.content_hash
        assert with_metadata not in (first_hash, "")
        second.add_texts(["x"], ids=["id0"])  # the same text: only its metadata is rewritten
        assert second.manifest.content_hash == first_hash
        second.delete_vectors(["id0", "id1"])
        assert second.manifest.content_hash == ""


def test_manifest_follows_deletes(db_path: Path) -> None:
    with build(db_path, ["x", "y"]) as store:
        store.delete_vectors(["id0"])
        assert store.manifest.chunk_count == 1
    with VectorStore(db_path, read_only=True) as reopened:
        assert reopened.manifest.chunk_count == 1


def test_backend_defaults_to_the_one_the_index_was_built_with(db_path: Path) -> None:
    build(db_path, ["x"]).close()
    with VectorStore(db_path, model_path=STATIC_MODEL, read_only=True) as store:
        assert store.backend == DEFAULT_BACKEND
        assert store.query("x")[0].chunk.text == "x"


def test_another_backend_is_refused_at_open(db_path: Path) -> None:
    build(db_path, ["x"]).close()
    with pytest.raises(
        IndexMismatchError, match=f"built with backend {DEFAULT_BACKEND}, not hashing"
    ):
        VectorStore(db_path, backend="hashing", read_only=True)


@pytest.mark.slow
def test_other_model_files_under_the_same_name_are_refused(db_path: Path, tmp_path: Path) -> None:
    build(db_path, ["x"]).close()
    altered = tmp_path / "altered-model"
    shutil.copytree(STATIC_MODEL, altered)
    config = altered / "config.json"
    config.write_text(config.read_text().rstrip().rstrip("}") + ', "altered": true}')
    with (
        VectorStore(db_path, model_path=altered, read_only=True) as store,
        pytest.raises(IndexMismatchError, match="other model files"),
    ):
        store.query("x")


class Fixed(BaseEmbedder):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.spec = "fixed"
        self._dimension = width

    def embed(self, texts):
        return np.ones((len(texts), self._dimension), dtype=np.float32)


def test_a_dimension_mismatch_is_refused(db_path: Path) -> None:
    with VectorStore(db_path, embedder=Fixed(8)) as store:
        store.add_texts(["x"])
    with VectorStore(db_path, embedder=Fixed(16)) as store:
        with pytest.raises(IndexMismatchError, match="8-dimensional vectors but fixed makes 16"):
            store.query("x")
        with pytest.raises(IndexMismatchError):
            store.add_texts(["y"])
        assert store.count() == 1


def test_migrations_are_recorded_once(db_path: Path) -> None:
    build(db_path, ["x"]).close()
    VectorStore(db_path, model_path=STATIC_MODEL).close()
    with duckdb.connect(str(db_path), read_only=True) as connection:
        versions = connection.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()
        assert versions == [(migration.version,) for migration in MIGRATIONS]


def with_postings_by_term_string(connection: duckdb.DuckDBPyConnection) -> None:
    """What schemas 1-3 stored: ``postings(term, key, tf)`` and no ``terms`` table."""
    connection.execute(
        "CREATE TABLE by_string AS SELECT t.term, p.key, p.tf"
        " FROM postings p JOIN terms t USING (term_id)"
    )
    connection.execute("DROP TABLE postings")
    connection.execute("DROP TABLE terms")
    connection.execute("ALTER TABLE by_string RENAME TO postings")


def without_content_digests(connection: duckdb.DuckDBPyConnection) -> None:
    """What schemas 1-5 stored: no ``chunks.content_digest``."""
    connection.execute("ALTER TABLE chunks DROP COLUMN content_digest")


@pytest.mark.slow
def test_migrating_to_content_digests_keeps_the_content_hash(db_path: Path) -> None:
    """Schema 6 keeps each chunk's part of the content hash in ``content_digest``; a file from
    before gets them computed when it is migrated, and its hash is the one a fresh index of
    the same chunks has, before and after a write."""
    texts = ["apples are red", "the sky is blue"]
    with build(db_path, texts) as store:
        store.add_texts(texts[:1], ids=["id0"], metadatas=[{"lang": "en"}])
        built = store.manifest.content_hash
    with duckdb.connect(str(db_path)) as connection:
        connection.execute("DELETE FROM schema_migrations WHERE version > 5")
        without_content_digests(connection)
    with VectorStore(db_path, read_only=True, model_path=STATIC_MODEL) as store:
        assert store.query_text("sky")[0].chunk.text == "the sky is blue"  # readable unmigrated
    with VectorStore(db_path, model_path=STATIC_MODEL) as store:  # read-write: migrated
        store.add_texts(["grass is green"], ids=["id2"])
        store.delete_vectors(["id2"])
        assert store.manifest.content_hash == built
    with duckdb.connect(str(db_path), read_only=True) as connection:
        nulls = "SELECT count(*) FROM chunks WHERE content_digest IS NULL"
        assert connection.execute(nulls).fetchall() == [(0,)]


def as_written_by_version_2(db_path: Path, *, written: bool = True) -> None:
    """Make an index file what version 2 of the schema left: postings by term string, and
    ``chunks`` only once something was written (version 3 creates it up front)."""
    with duckdb.connect(str(db_path)) as connection:
        connection.execute("DELETE FROM schema_migrations WHERE version > 2")
        with_postings_by_term_string(connection)
        without_content_digests(connection)
        if not written:
            connection.execute("DROP TABLE chunks")
            connection.execute("DELETE FROM manifest")


@pytest.mark.slow
@pytest.mark.parametrize("memory_index", [True, False])
def test_an_index_of_schema_version_2_is_searched_read_only_without_migrating(
    db_path: Path, memory_index: bool
) -> None:
    texts = ["apples are red", "the sky is blue", "the sea is blue too"]
    build(db_path, texts).close()
    with VectorStore(db_path, read_only=True, model_path=STATIC_MODEL) as store:
        current = store.query("blue sky", top_k=3)
    as_written_by_version_2(db_path)
    with VectorStore(
        db_path, read_only=True, model_path=STATIC_MODEL, memory_index=memory_index
    ) as store:
        found = store.query("blue sky", top_k=3)
        assert [hit.chunk.text for hit in found] == [hit.chunk.text for hit in current]
        assert [hit.score for hit in found] == pytest.approx([hit.score for hit in current])
        assert store.query_text("sky", top_k=1)[0].chunk.text == "the sky is blue"
        assert store.count() == 3
    with VectorStore(db_path, model_path=STATIC_MODEL) as store:  # read-write: migrated
        store.add_texts(["grass is green"])
        assert store.count() == 4
        assert store.query_text("green", top_k=1)[0].chunk.text == "grass is green"
    with duckdb.connect(str(db_path), read_only=True) as connection:
        assert connection.execute("SELECT max(version) FROM schema_migrations").fetchall() == [
            (SCHEMA_VERSION,)
        ]
        declared = connection.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM duckdb_columns()"
            " WHERE table_name IN ('terms', 'postings') ORDER BY 1, column_index"
        ).fetchall()
        assert declared == [  # the migration declares the tables, not CREATE TABLE AS
            ("postings", "term_id", "INTEGER", False),
            ("postings", "key", "BIGINT", False),
            ("postings", "tf", "INTEGER", False),
            ("terms", "term_id", "INTEGER", False),
            ("terms", "term", "VARCHAR", False),
        ]


@pytest.mark.slow
def test_a_never_written_index_of_schema_version_2_gets_its_chunks_table(db_path: Path) -> None:
    build(db_path, ["x"]).close()
    as_written_by_version_2(db_path, written=False)
    with pytest.raises(NotAnIndexError, match="it is empty"):
        VectorStore(db_path, read_only=True)
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        assert store.count() == 0
        assert store.list_vectors().vectors == []
        store.add_texts(["now it has one"])
        assert [hit.chunk.text for hit in store.query("one")] == ["now it has one"]


def test_a_newer_schema_is_refused(db_path: Path) -> None:
    build(db_path, ["x"]).close()
    with duckdb.connect(str(db_path)) as connection:
        connection.execute("INSERT INTO schema_migrations VALUES (99, 'from the future', now())")
    with pytest.raises(NotAnIndexError, match="newer than this duckdb-vectors"):
        VectorStore(db_path)
    with pytest.raises(NotAnIndexError, match="schema version is 99"):
        VectorStore(db_path, read_only=True)


@pytest.mark.slow
def test_an_interrupted_write_leaves_the_index_as_it_was(db_path: Path) -> None:
    store = build(db_path, ["kept text"])
    before = store.manifest.content_hash
    # Three batches, the last one bad: the first is already inserted when the error comes.
    texts = [f"new text {i}" for i in range(2 * WRITE_BATCH + 1)]
    metadatas = [{}] * (2 * WRITE_BATCH) + [{"when": object()}]
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        store.add_texts(texts, metadatas=metadatas)
    store.close()
    with VectorStore(db_path, model_path=STATIC_MODEL, read_only=True) as reopened:
        assert reopened.count() == 1
        assert reopened.manifest.content_hash == before
        assert reopened.query("kept")[0].chunk.text == "kept text"


def test_a_schema_version_1_index_is_refused_read_only_with_the_command_that_migrates_it(
    db_path: Path,
) -> None:
    build(db_path, ["apples are red"]).close()
    with duckdb.connect(str(db_path)) as connection:  # what version 1 left: no documents table
        connection.execute("DELETE FROM schema_migrations WHERE version > 1")
        connection.execute("DROP TABLE documents")
        with_postings_by_term_string(connection)
        without_content_digests(connection)
    with pytest.raises(NotAnIndexError, match=r"schema version is 1, .*duckdb-vectors upgrade"):
        VectorStore(db_path, read_only=True)
    VectorStore(db_path, model_path=STATIC_MODEL).close()  # read-write: migrated
    with VectorStore(db_path, read_only=True, model_path=STATIC_MODEL) as store:
        assert store.query_text("apples")[0].chunk.text == "apples are red"


def test_an_index_whose_postings_were_made_by_create_table_as_is_written_and_compacted(
    db_path: Path,
) -> None:
    """Files migrated before ``terms`` and ``postings`` were declared hold them as made by
    CREATE TABLE AS (no NOT NULL): they are written to, compacted and searched as before."""
    texts = ["apples are red", "the sky is blue"]
    build(db_path, texts).close()
    with duckdb.connect(str(db_path)) as connection:
        for table in ("terms", "postings"):
            connection.execute(f"CREATE TABLE undeclared AS FROM {table}")
            connection.execute(f"DROP TABLE {table}")
            connection.execute(f"ALTER TABLE undeclared RENAME TO {table}")
    with VectorStore(db_path, model_path=STATIC_MODEL) as store:
        # Each write's new terms sort before the old ones: the postings fall out of order.
        for word in ("aardvarks", "aaa", "aa"):
            store.add_texts([f"{word} are blue"])
        assert store.query_text("aardvarks", top_k=1)[0].chunk.text == "aardvarks are blue"
        assert store.count() == 5
    with duckdb.connect(str(db_path), read_only=True) as connection:
        unordered = connection.execute(
            "SELECT count(*) FILTER (WHERE term_id < previous) FROM"
            " (SELECT term_id, lag(term_id) OVER () AS previous FROM postings)"
        ).fetchall()
        assert unordered == [(0,)]
        nullable = connection.execute(
            "SELECT bool_or(is_nullable) FROM duckdb_columns() WHERE table_name = 'postings'"
        ).fetchall()
        assert nullable == [(False,)]  # compacted into the declared table
