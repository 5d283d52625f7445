"""How the BM25 postings are stored: by term id, in term order after large writes."""

from __future__ import annotations

import gc
import weakref
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pytest
from conftest import DEFAULT_BACKEND, STATIC_MODEL, as_written_by_version_8

from duckdb_vectors import VectorStore
from duckdb_vectors.index import postings
from duckdb_vectors.models import Chunk
from duckdb_vectors.search.answer import Scope, SqlSearcher
from duckdb_vectors.search.memory_index import MemoryIndex
from duckdb_vectors.tokenizer import tokenize

TEXTS = [
    f"note {i}: the {'red' if i % 3 else 'blue'} fox number {i} jumps {i % 7} times"
    for i in range(700)
]


def stored_term_ids(store: VectorStore) -> np.ndarray:
    return store.connection.sql("SELECT term_id FROM postings").fetchnumpy()["term_id"]


def in_term_order(term_ids: np.ndarray) -> bool:
    return bool(np.all(term_ids[1:] >= term_ids[:-1]))


def test_postings_are_rewritten_in_term_order_only_after_large_writes(tmp_path: Path) -> None:
    with VectorStore(tmp_path / "x.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(TEXTS[:300])
        ordered = stored_term_ids(store)
        assert in_term_order(ordered)
        store.add_texts(TEXTS[300:310])  # a few appended: left after the ordered ones
        appended = stored_term_ids(store)
        assert not in_term_order(appended)
        assert np.array_equal(appended[: len(ordered)], ordered)
        store.add_texts(TEXTS[310:])  # then more than half out of order: rewritten
        assert in_term_order(stored_term_ids(store))
        terms_in_use = store.connection.sql(
            "SELECT count(*) FROM terms WHERE term_id IN (SELECT term_id FROM postings)"
        ).fetchall()[0][0]
        assert store.connection.sql("SELECT count(*) FROM terms").fetchall()[0][0] == terms_in_use


def test_an_index_with_appended_postings_loads_and_ranks_like_sql(tmp_path: Path) -> None:
    with VectorStore(tmp_path / "x.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(TEXTS[:300])
        store.add_texts(TEXTS[300:550])  # appended, under half: left out of term order
        store.delete_vectors([store.list_vectors(limit=5).vectors[i].chunk_id for i in range(5)])
        memory, sql = (
            MemoryIndex.load(store.connection, store.slice_keys, store.languages),
            SqlSearcher(store.connection, 256, store.slice_keys, store.languages),
        )
        for query in ("red fox", "blue 7 times", "number 305", "jumps", "red dog"):
            from_memory = memory.lexical_ranking(tokenize(query), 20, Scope())
            from_sql = sql.lexical_ranking(tokenize(query), 20, Scope())
            assert list(from_memory.keys) == list(from_sql.keys), query
            assert np.allclose(from_memory.scores, from_sql.scores, rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("run_limit", [postings.RUN_LIMIT, 500], ids=["one-run", "runs"])
def test_batches_into_an_empty_index_go_in_as_one_run_in_term_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_limit: int
) -> None:
    """Into an empty index, a write's postings are held and inserted in term order when it
    ends (no compaction needed); past RUN_LIMIT they go in batch by batch, compacted as
    before. Either way the postings are those of the same batches written into an index
    that was not empty."""
    monkeypatch.setattr(postings, "RUN_LIMIT", run_limit)
    rng = np.random.default_rng(3)
    chunks = [Chunk(chunk_id=f"c{i}", text=text) for i, text in enumerate(TEXTS)]
    vectors = rng.standard_normal((len(chunks), 8)).astype(np.float32)
    batches = [(chunks[i : i + 64], vectors[i : i + 64]) for i in range(0, len(chunks), 64)]
    built = []
    for name, first in (("empty", None), ("looked-up", "other")):
        with VectorStore(tmp_path / f"{name}.duckdb", "hashing:8") as store:
            if first:
                store.put_vectors([{"key": first, "data": [1.0] * 8, "text": "fox zebra"}])
            with store.transaction():  # the compaction waits for the end of the transaction
                store.put_vector_batches(batches, datetime.now(UTC))
                if first is None:
                    assert in_term_order(stored_term_ids(store)) == (run_limit > 20_000)
            store.delete_vectors([first] if first else [])
            assert in_term_order(stored_term_ids(store))
            built.append(
                store.connection.execute(
                    "SELECT c.chunk_id, t.term, p.tf FROM postings p JOIN terms t"
                    " USING (term_id) JOIN chunks c USING (key) ORDER BY ALL"
                ).fetchall()
            )
    assert built[0] == built[1]
    assert len(built[0]) > 3000


def test_inserted_postings_are_not_held_until_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB keeps what was registered for a statement referenced until the transaction
    ends: a write's postings (16 bytes each) must be let go once inserted, or a million-chunk
    import holds all 40 million of them (its memory climbed to 2 GB)."""
    monkeypatch.setattr(postings, "RUN_LIMIT", 2)  # the third posting spills the run
    with VectorStore(tmp_path / "x.duckdb", "hashing:8") as store, store.transaction():
        batch = {
            "term_id": np.array([0, 1, 1], dtype=np.int32),
            "key": np.array([1, 1, 2], dtype=np.int64),
            "tf": np.array([2, 1, 1], dtype=np.int32),
        }
        alive = [weakref.ref(values) for values in batch.values()]
        postings.Run(store.connection).add(batch)
        del batch
        gc.collect()
        assert [ref() for ref in alive] == [None, None, None]
        stored = "SELECT term_id, key, tf FROM postings ORDER BY ALL"
        assert store.connection.execute(stored).fetchall() == [(0, 1, 2), (1, 1, 1), (1, 2, 1)]


@pytest.mark.slow
def test_an_index_of_schema_8_is_searched_read_only_and_loses_the_digests_read_write(
    tmp_path: Path,
) -> None:
    path = tmp_path / "x.duckdb"
    queries = ("red fox", "blue 7 times", "number 305", "регистр")
    with VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts([*TEXTS[:400], "регистрация и регистр"])
        found = {query: store.query_text(query, top_k=5) for query in queries}
    with duckdb.connect(str(path)) as connection:
        as_written_by_version_8(connection)
    with VectorStore(path, read_only=True, model_path=STATIC_MODEL) as store:
        store.warm_up()
        assert {query: store.query_text(query, top_k=5) for query in queries} == found
    with VectorStore(path, model_path=STATIC_MODEL) as store:  # read-write: migrated
        assert {query: store.query_text(query, top_k=5) for query in queries} == found
        store.add_texts(["a new fox"])  # new terms are written without digests
        assert store.query_text("new", top_k=1)[0].chunk.text == "a new fox"
        columns = store.connection.sql(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = 'terms'"
        ).fetchall()
    assert columns == [("term_id",), ("term",)]
