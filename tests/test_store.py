"""The VectorStore SDK, used the way the README shows it, on real DuckDB files."""

from __future__ import annotations

import gc
import hashlib
import weakref
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pytest
from conftest import DEFAULT_BACKEND, INTRO_TEXTS, STATIC_MODEL

from duckdb_vectors import (
    Chunk,
    DuckDBVectorsError,
    EmbedderError,
    FusionSettings,
    NotAnIndexError,
    ReadOnlyError,
    SearchResult,
    VectorStore,
)
from duckdb_vectors.config import STATIC_LEXICAL_WEIGHT
from duckdb_vectors.embedders.hashing import HashingEmbedder
from duckdb_vectors.index.db import (
    Transaction,
    column,
    registered,
    registered_arrow,
    threads_reserved,
)
from duckdb_vectors.writes import WRITE_BATCH


def test_the_readme_walkthrough(db_path: Path) -> None:
    store = VectorStore(db_path=db_path, backend=DEFAULT_BACKEND, model_path=STATIC_MODEL)
    ids = store.add_texts(
        ids=["doc:0", "doc:1"],
        texts=["an in-process analytical database", "vectors capture similarity"],
        metadatas=[{"kind": "intro"}, {"kind": "intro"}],
    )
    assert ids == ["doc:0", "doc:1"]

    hits = store.query("embedded database", top_k=3)
    assert [hit.chunk.chunk_id for hit in hits] == ["doc:0", "doc:1"]
    assert hits[0].score >= hits[1].score
    assert hits[0].vector_rank == 1 and hits[0].text_rank == 1  # "database" matches lexically
    assert hits[1].text_rank is None  # no query word in it

    vector_only = store.query("embedded database", top_k=3, hybrid=False)
    assert all(hit.text_rank is None for hit in vector_only)
    vector = store.embedder.embed(["embedded database"])[0]
    by_vector = store.query_vectors(vector, top_k=3)
    assert [h.chunk.chunk_id for h in by_vector] == [h.chunk.chunk_id for h in vector_only]

    assert store.get_vectors(["doc:0"])[0].metadata == {"kind": "intro"}
    assert len(store.list_vectors(limit=10)) == 2
    assert store.count() == 2
    assert store.delete_vectors(["doc:1"]) == 1
    assert store.count() == 1
    store.close()
    assert not Path(f"{db_path}.wal").exists()


def test_results_are_pydantic_models_with_chunk_fields(filled_store: VectorStore) -> None:
    hit = filled_store.query("analytical database", top_k=1)[0]
    assert isinstance(hit, SearchResult)
    assert hit.chunk.source == "docs/0.md"
    assert hit.chunk.etag and hit.chunk.stamped_at is not None
    assert hit.model_dump()["chunk"]["chunk_id"] == "doc:0"


def test_upserting_the_same_id_replaces_the_chunk(filled_store: VectorStore) -> None:
    filled_store.add_texts(ids=["doc:0"], texts=["completely new words about penguins"])
    assert filled_store.count() == len(INTRO_TEXTS)
    assert filled_store.get_vectors(["doc:0"])[0].text == "completely new words about penguins"
    assert filled_store.query("penguins", top_k=1)[0].chunk.chunk_id == "doc:0"
    assert filled_store.query("analytical", top_k=1)[0].chunk.chunk_id != "doc:0"


def test_unchanged_text_is_not_embedded_again(store: VectorStore) -> None:
    chunks = dict(ids=["a", "b"], texts=["first text", "second text"])
    store.add_texts(**chunks)
    from duckdb_vectors import Chunk

    again = store.add_chunks(
        [
            Chunk(chunk_id="a", text="first text", metadata={"v": 2}),
            Chunk(chunk_id="b", text="changed text"),
        ]
    )
    assert (again.added, again.updated, again.unchanged, again.embedded) == (0, 1, 1, 1)
    assert store.get_vectors(["a"])[0].metadata == {"v": 2}  # metadata still updated


def test_a_moved_text_reuses_its_stored_vector(store: VectorStore) -> None:
    from duckdb_vectors import Chunk

    store.add_chunks([Chunk(chunk_id="old.md#0", text="a paragraph that moves")])
    moved = store.add_chunks([Chunk(chunk_id="new.md#0", text="a paragraph that moves")])
    assert (moved.added, moved.embedded) == (1, 0)
    first, second = store.get_vectors(["old.md#0", "new.md#0"], return_data=True)
    assert first.embedding == second.embedding


@pytest.mark.slow
def test_a_generator_of_chunks_is_written_in_batches_each_with_its_own_vectors(
    store: VectorStore,
) -> None:
    count = 2 * WRITE_BATCH + 7  # three batches, embedded in the background one by one

    def chunks():
        for i in range(count):
            yield Chunk(chunk_id=f"c{i}", text=f"chunk {i} about topic {i % 13}", source="gen")

    stats = store.add_chunks(chunks())
    assert (stats.added, stats.embedded, store.count()) == (count, count, count)
    for chunk_id in ("c0", f"c{WRITE_BATCH}", f"c{count - 1}"):
        stored = store.get_vectors([chunk_id], return_data=True)[0]
        expected = store.embedder.embed([stored.text])[0]
        assert np.allclose(stored.embedding, expected, atol=1e-6)


def test_an_id_repeated_in_a_later_batch_is_refused_and_nothing_is_written(
    store: VectorStore,
) -> None:
    chunks = [Chunk(chunk_id=f"c{i % WRITE_BATCH}", text=f"t{i}") for i in range(WRITE_BATCH + 1)]
    with pytest.raises(ValueError, match=r"duplicate ids in one write: \['c0'\]"):
        store.add_chunks(chunks)
    assert store.count() == 0


class FailsOnPoison(HashingEmbedder):
    """An embedder that breaks on one text, as a model or a cloud API can."""

    def embed(self, texts):
        if "poison" in texts:
            raise RuntimeError("the embedding service failed")
        return super().embed(texts)


def test_an_embedding_failure_in_a_later_batch_leaves_the_index_as_it_was(db_path: Path) -> None:
    with VectorStore(db_path, embedder=FailsOnPoison()) as store:
        store.add_texts(["kept"], ids=["k"])
        texts = [f"text {i}" for i in range(2 * WRITE_BATCH)] + ["poison"]
        with pytest.raises(RuntimeError, match="the embedding service failed"):
            store.add_texts(texts)
        assert [chunk.chunk_id for chunk in store.list_vectors()] == ["k"]
        assert store.manifest.chunk_count == 1


THREADS = "SELECT current_setting('threads')"


class RecordsThreads(FailsOnPoison):
    """Notes DuckDB's thread count while it embeds (through its own cursor: another thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.cursor: duckdb.DuckDBPyConnection | None = None
        self.seen: list[int] = []

    def embed(self, texts):
        if self.cursor is not None:
            self.seen.append(self.cursor.execute(THREADS).fetchall()[0][0])
        return super().embed(texts)


def test_duckdb_gives_a_long_write_s_embedder_a_thread_and_takes_it_back(db_path: Path) -> None:
    embedder = RecordsThreads()
    with VectorStore(db_path, embedder=embedder) as store:
        store.connection.execute("SET threads = 4")
        embedder.cursor = store.connection.cursor()
        store.add_texts([f"text {i}" for i in range(2 * WRITE_BATCH)])
        # The second batch is embedded while the first is written: DuckDB has a thread fewer.
        # (The first may be embedded before or after that starts, as its thread is scheduled.)
        assert embedder.seen[1:] == [3]
        assert store.connection.execute(THREADS).fetchall() == [(4,)]
        with pytest.raises(RuntimeError, match="the embedding service failed"):
            store.add_texts([f"more {i}" for i in range(WRITE_BATCH)] + ["poison"])
        assert store.connection.execute(THREADS).fetchall() == [(4,)]
        embedder.cursor.close()


def test_threads_come_back_after_a_write_conflict_aborts_the_transaction(db_path: Path) -> None:
    """Two stores on one file share DuckDB's settings; a conflict aborts the transaction."""
    with (
        VectorStore(db_path, embedder=HashingEmbedder()) as first,
        VectorStore(db_path, embedder=HashingEmbedder()) as second,
    ):
        first.connection.execute("SET threads = 4")
        first.add_texts(["one"], ids=["k"])
        fillers = [f"filler {i}" for i in range(WRITE_BATCH)]
        with pytest.raises(duckdb.TransactionException, match="Conflict"), first.transaction():
            first.count()
            second.add_texts(["two"], ids=["k"])
            first.add_texts(["three", *fillers], ids=["k", *fillers])
        assert first.connection.execute(THREADS).fetchall() == [(4,)]
        assert [chunk.text for chunk in second.get_vectors(["k"])] == ["two"]


def test_type_sampling_comes_back_after_a_failed_statement_aborts_the_write(
    db_path: Path,
) -> None:
    """An aborted transaction refuses SET until its rollback; the setting is restored after."""
    sample = "SELECT current_setting('pandas_analyze_sample')"
    with (
        VectorStore(db_path, embedder=HashingEmbedder()) as first,
        VectorStore(db_path, embedder=HashingEmbedder()) as second,
    ):
        first.add_texts(["one"], ids=["k"])
        first.connection.execute("SET pandas_analyze_sample = 50")
        with pytest.raises(duckdb.Error, match=r"(?i)conflict|duplicate key"), first.transaction():
            first.count()
            second.add_texts(["two"], ids=["new"])
            first.add_texts(["three"], ids=["new"])  # its INSERT fails: the other store has it
        assert first.connection.execute(sample).fetchall() == [(50,)]
        first.connection.register("mine", {"x": np.array([1, 2.5], dtype=object)})
        assert first.connection.execute("SELECT x FROM mine").fetchall() == [(1.0,), (2.5,)]


def test_a_chunk_iterator_may_write_to_the_store_it_feeds(db_path: Path) -> None:
    """The iterator runs between a batch's planning and its writing."""
    with VectorStore(db_path, embedder=HashingEmbedder()) as store:

        def chunks():
            yield Chunk(chunk_id="k", text="k from the iterator")
            yield from (Chunk(chunk_id=f"f{i}", text=f"filler {i}") for i in range(WRITE_BATCH))
            store.add_texts(["k written meanwhile"], ids=["k"])  # before the first batch lands
            yield Chunk(chunk_id="last", text="the last one")

        store.add_chunks(chunks())
        assert [chunk.text for chunk in store.get_vectors(["k", "last"])] == [
            "k from the iterator",
            "the last one",
        ]
        assert store.count() == WRITE_BATCH + 2


def test_overlapping_writes_reserve_threads_once(db_path: Path) -> None:
    with VectorStore(db_path, embedder=HashingEmbedder()) as store:
        store.connection.execute("SET threads = 4")
        other = store.connection.cursor()
        with threads_reserved(store.connection, 1):
            with threads_reserved(other, 1):
                assert other.execute(THREADS).fetchall() == [(3,)]
            assert store.connection.execute(THREADS).fetchall() == [(3,)]
        assert store.connection.execute(THREADS).fetchall() == [(4,)]
        other.close()


def test_a_write_types_columns_by_their_first_value_and_restores_the_setting(
    db_path: Path,
) -> None:
    """Writes tell DuckDB to type each scanned column by one value (a vector column costs a
    numpy call per value sampled), and leave the connection's own setting as it was."""
    sample = "SELECT current_setting('pandas_analyze_sample')"
    with VectorStore(db_path, embedder=HashingEmbedder()) as store:
        store.connection.execute("SET pandas_analyze_sample = 50")
        store.add_chunks(
            [
                Chunk(chunk_id="a", text="untitled first"),
                Chunk(chunk_id="b", text="titled", title="T", metadata={"k": [1, "x"]}),
            ]
        )
        assert store.connection.execute(sample).fetchall() == [(50,)]
        stored = store.get_vectors(["a", "b"], return_data=True)
        assert [(chunk.title, chunk.metadata) for chunk in stored] == [
            (None, {}),
            ("T", {"k": [1, "x"]}),
        ]
        expected = store.embedder.embed(["untitled first"])[0]
        assert np.allclose(stored[0].embedding, expected)


def test_writes_in_one_transaction_are_all_or_nothing(store: VectorStore) -> None:
    store.add_texts(["kept"], ids=["k"])
    with pytest.raises(RuntimeError), store.transaction():
        store.add_texts(["first batch"], ids=["a"])
        store.delete_vectors(["k"])
        raise RuntimeError("interrupted")
    assert [c.chunk_id for c in store.list_vectors()] == ["k"]
    assert store.manifest.chunk_count == 1
    with store.transaction():
        store.add_texts(["first batch"], ids=["a"])
        store.add_texts(["second batch"], ids=["b"])
    assert store.count() == 3 and store.manifest.chunk_count == 3


def test_a_query_inside_a_transaction_sees_its_uncommitted_writes(store: VectorStore) -> None:
    """The snapshot loads its postings on a second connection only when nothing is pending:
    that connection would not see a transaction's rows."""
    store.add_texts(["the committed chunk"], ids=["old"])
    assert [hit.chunk.chunk_id for hit in store.query_text("committed")] == ["old"]
    with store.transaction():
        store.add_texts(["an uncommitted zebra"], ids=["new"])
        assert [hit.chunk.chunk_id for hit in store.query_text("zebra")] == ["new"]
        assert store.query("uncommitted zebra", top_k=1)[0].chunk.chunk_id == "new"
    assert [hit.chunk.chunk_id for hit in store.query_text("zebra")] == ["new"]


def test_ids_default_to_a_hash_of_the_text(store: VectorStore) -> None:
    first = store.add_texts(["same words"])
    second = store.add_texts(["same words"])
    assert first == second and store.count() == 1


def test_get_vectors_keeps_the_order_asked_and_skips_missing(filled_store: VectorStore) -> None:
    chunks = filled_store.get_vectors(["doc:3", "missing", "doc:1"], return_data=True)
    assert [c.chunk_id for c in chunks] == ["doc:3", "doc:1"]
    assert len(chunks[0].embedding) == 256


def test_list_vectors_pages_with_a_token(filled_store: VectorStore) -> None:
    seen, token = [], None
    while True:
        page = filled_store.list_vectors(limit=3, next_token=token)
        seen.extend(chunk.chunk_id for chunk in page)
        token = page.next_token
        if token is None:
            break
    assert seen == sorted(f"doc:{i}" for i in range(len(INTRO_TEXTS)))
    with pytest.raises(ValueError, match="next_token is not valid"):
        filled_store.list_vectors(next_token="garbage!")


def test_put_vectors_in_s3_vectors_shape(store: VectorStore) -> None:
    rng = np.random.default_rng(0)
    data = rng.normal(size=(3, 256)).astype(np.float32)
    store.put_vectors(
        [
            {"key": f"v{i}", "data": {"float32": data[i].tolist()}, "metadata": {"i": i}}
            for i in range(3)
        ]
    )
    hits = store.query_vectors(data[1], top_k=3)
    assert hits[0].chunk.chunk_id == "v1"
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    stored = store.get_vectors(["v2"], return_data=True)[0]
    assert np.allclose(stored.embedding, data[2])
    with pytest.raises(ValueError, match="same length"):
        store.put_vectors(
            [
                {"key": "x", "data": {"float32": [1.0]}},
                {"key": "y", "data": {"float32": [1.0, 2.0]}},
            ]
        )
    with pytest.raises(DuckDBVectorsError, match="256-dimensional"):
        store.put_vectors([{"key": "x", "data": {"float32": [1.0, 2.0]}}])


@pytest.mark.parametrize(
    "given",
    [np.ones((2, 256), dtype=np.float32), [np.ones(256, dtype=np.float32)]],
    ids=["a-matrix", "a-list-of-rows"],
)
def test_put_vectors_refuses_bare_vectors_with_the_documented_error(
    store: VectorStore, given
) -> None:
    with pytest.raises(ValueError, match=r"put_vectors takes a list|must look like"):
        store.put_vectors(given)
    assert store.count() == 0


@pytest.mark.parametrize(
    ("built_with", "opened_with"),
    [
        ("hashing:256", HashingEmbedder(256)),
        ("hashing", HashingEmbedder(256)),
        ("hashing", "hashing:256"),
        (" Hashing:256 ", "hashing"),
    ],
)
def test_one_backend_written_two_ways_is_one_backend(
    db_path: Path, built_with: str, opened_with
) -> None:
    with VectorStore(db_path, backend=built_with) as store:
        store.add_texts(["the same backend"], ids=["x"])
    assert store.manifest.backend == "hashing:256"  # recorded in its canonical form
    option = {"embedder": opened_with} if isinstance(opened_with, HashingEmbedder) else {}
    backend = None if option else opened_with
    with VectorStore(db_path, backend=backend, read_only=True, **option) as reopened:
        assert reopened.query("same backend", top_k=1)[0].chunk.chunk_id == "x"


def test_delete_where_by_filter(filled_store: VectorStore) -> None:
    assert filled_store.delete_where(filter={"kind": "intro"}) == 2
    assert filled_store.count() == len(INTRO_TEXTS) - 2


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_read_only_refuses_every_write_and_leaves_the_file_unchanged(db_path: Path) -> None:
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(["a frozen text"], ids=["x"])
    before = _file_digest(db_path)
    with VectorStore(db_path, model_path=STATIC_MODEL, read_only=True) as frozen:
        for write in (
            lambda: frozen.add_texts(["more"]),
            lambda: frozen.put_vectors([{"key": "k", "data": {"float32": [0.0] * 256}}]),
            lambda: frozen.delete_vectors(["x"]),
            lambda: frozen.delete_where(filter={"a": 1}),
        ):
            with pytest.raises(ReadOnlyError, match="open read-only"):
                write()
        assert frozen.query("frozen", top_k=1)[0].chunk.chunk_id == "x"
    assert _file_digest(db_path) == before


@pytest.mark.slow
def test_several_read_only_stores_share_a_file(db_path: Path) -> None:
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(INTRO_TEXTS)
    readers = [VectorStore(db_path, model_path=STATIC_MODEL, read_only=True) for _ in range(3)]
    answers = {tuple(h.chunk.chunk_id for h in r.query("database", top_k=3)) for r in readers}
    assert len(answers) == 1
    for reader in readers:
        reader.close()


def test_one_file_opened_two_ways_in_one_process_is_a_clear_error(db_path: Path) -> None:
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(["x"])
    with VectorStore(db_path, read_only=True):
        with pytest.raises(DuckDBVectorsError, match="already open in this process read-only"):
            VectorStore(db_path)
        with VectorStore(db_path, read_only=True) as second_reader:
            assert second_reader.count() == 1


def test_opening_a_missing_file_read_only_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NotAnIndexError, match="does not exist"):
        VectorStore(tmp_path / "nope.duckdb", read_only=True)


def test_a_file_that_is_not_duckdb_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.duckdb"
    bogus.write_bytes(b"this is not a database" * 100)
    with pytest.raises(NotAnIndexError, match=r"bogus\.duckdb"):
        VectorStore(bogus, read_only=True)


def test_a_duckdb_file_that_is_not_an_index_is_refused(tmp_path: Path) -> None:
    import duckdb

    other = tmp_path / "other.duckdb"
    with duckdb.connect(str(other)) as connection:
        connection.execute("CREATE TABLE sales (amount INTEGER)")
    with pytest.raises(NotAnIndexError, match="not a usable index"):
        VectorStore(other)


@pytest.mark.parametrize("top_k", [0, -1, 10**9, 2.5, True])
def test_top_k_out_of_range_is_refused(filled_store: VectorStore, top_k: object) -> None:
    with pytest.raises(ValueError, match="top_k must be an integer"):
        filled_store.query("database", top_k=top_k)  # type: ignore[arg-type]


def test_bad_write_arguments_are_clear(store: VectorStore) -> None:
    with pytest.raises(ValueError, match="ids has 1 items but texts has 2"):
        store.add_texts(["a", "b"], ids=["x"])
    with pytest.raises(ValueError, match="duplicate ids"):
        store.add_texts(["a", "b"], ids=["x", "x"])
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        store.add_texts(["a"], metadatas=[{"when": object()}])
    with pytest.raises(ValueError, match="non-empty string"):
        store.query("   ")
    assert store.count() == 0


def test_an_empty_index_answers_with_no_results(store: VectorStore) -> None:
    assert store.query("anything") == []
    assert store.list_vectors().vectors == []
    assert store.count() == 0


def test_a_new_index_creates_its_folder(tmp_path: Path) -> None:
    path = tmp_path / "new" / "folder" / "index.duckdb"
    with VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(["x"])
    assert path.is_file()


def test_in_memory_store(tmp_path: Path) -> None:
    with VectorStore(":memory:", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(["ephemeral text"])
        assert store.query("ephemeral")[0].chunk.text == "ephemeral text"


def test_duckdb_draws_no_progress_bar_of_its_own(filled_store: VectorStore) -> None:
    setting = "SELECT current_setting('enable_progress_bar')"
    assert filled_store.connection.execute(setting).fetchall() == [(False,)]


def test_a_file_that_never_got_an_index_is_not_left_behind(tmp_path: Path) -> None:
    path = tmp_path / "first.duckdb"
    broken = tmp_path / "no-model-here"
    broken.mkdir()
    with (
        pytest.raises(DuckDBVectorsError),
        VectorStore(path, DEFAULT_BACKEND, model_path=broken) as store,
    ):
        store.add_texts(["the model cannot load, so nothing is committed"])
    assert not path.exists() and not Path(f"{path}.wal").exists()
    with VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(["this one commits"])
    assert path.is_file()  # a file that holds an index stays


def test_an_existing_file_is_never_removed(db_path: Path) -> None:
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(["kept"], ids=["k"])
        store.delete_vectors(["k"])
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL):
        pass
    assert db_path.is_file()


def test_a_written_batch_is_not_held_until_the_commit(tmp_path: Path) -> None:
    """DuckDB keeps registered objects referenced until the transaction ends; the batch's
    vectors and texts must not be, or a million-chunk index run holds them all at once."""
    connection = duckdb.connect(str(tmp_path / "x.duckdb"))
    connection.execute("CREATE TABLE t (v FLOAT[4])")
    vectors = [np.arange(4, dtype=np.float32) + i for i in range(3)]
    alive = [weakref.ref(vector) for vector in vectors]
    with Transaction(connection):
        with registered(connection, "batch", {"v": column(vectors)}):
            connection.execute("INSERT INTO t SELECT CAST(v AS FLOAT[4]) FROM batch")
        del vectors
        gc.collect()
        assert [ref() for ref in alive] == [None, None, None]
    assert connection.execute("SELECT count(*) FROM t").fetchall() == [(3,)]
    connection.close()


def memory_limit(store: VectorStore) -> str:
    return store.connection.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]


def test_a_write_holds_duckdb_to_512_mb_and_gives_the_limit_back(tmp_path: Path) -> None:
    """DuckDB caches a write's new blocks up to 80% of RAM; a million-chunk run grew to 3 GB."""
    with VectorStore(tmp_path / "x.duckdb", "hashing:64") as store:
        before = memory_limit(store)
        with store.transaction():
            store.add_texts(["one chunk"], ids=["a"])
            assert memory_limit(store) == "512.0 MiB"
        assert memory_limit(store) == before
        store.connection.execute("SET memory_limit = '400MB'")  # a small container's
        with store.transaction():
            assert memory_limit(store) == "381.4 MiB"


def test_warm_up_loads_the_index_and_raises_a_model_that_cannot_load(
    filled_store: VectorStore, tmp_path: Path
) -> None:
    """The model loads in a thread beside the index: its error still reaches the caller, as
    one line, and the index it loaded meanwhile answers what needs no model."""
    filled_store.close()
    empty = tmp_path / "no-model"
    empty.mkdir()
    with VectorStore(filled_store.db_path, read_only=True, model_path=empty) as reader:
        with pytest.raises(EmbedderError, match="does not hold the model files") as raised:
            reader.warm_up()
        assert "\n" not in str(raised.value)
        assert reader.query_text("E1234", 1)[0].chunk.chunk_id == "doc:2"
    with VectorStore(filled_store.db_path, read_only=True, model_path=STATIC_MODEL) as reader:
        reader.warm_up()
        assert reader.query(INTRO_TEXTS[5], 1, hybrid=False)[0].chunk.chunk_id == "doc:5"


def test_an_arrow_batch_is_not_held_until_the_commit(tmp_path: Path) -> None:
    """The same for the Arrow batches new chunks are inserted from: their matrix of vectors
    (scanned in place, not copied) is released once the statement has read it."""
    connection = duckdb.connect(str(tmp_path / "x.duckdb"))
    connection.execute("CREATE TABLE t (v FLOAT[4], s VARCHAR)")
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4).copy()  # owns its buffer
    alive = weakref.ref(matrix)
    with Transaction(connection):
        with registered_arrow(connection, "batch", {"v": matrix, "s": ["a", None, "é"]}):
            connection.execute("INSERT INTO t SELECT v, s FROM batch")
        del matrix
        gc.collect()
        assert alive() is None
    assert connection.execute("SELECT v[4], s FROM t ORDER BY v[1]").fetchall() == [
        (3.0, "a"),
        (7.0, None),
        (11.0, "é"),
    ]
    connection.close()


def test_put_vectors_round_trips_vectors_and_fields_exactly(store: VectorStore) -> None:
    """Vectors go in as Arrow float32 lists: every bit comes back, extremes included; texts,
    titles, sources and positions keep their NULLs and their non-ASCII characters."""
    rng = np.random.default_rng(5)
    matrix = rng.standard_normal((4, store.embedder.dimension)).astype(np.float32)
    finfo = np.finfo(np.float32)
    matrix[0, :4] = [finfo.max, finfo.tiny, -finfo.smallest_subnormal, -0.0]
    items = [
        {"key": "a", "data": {"float32": matrix[0].tolist()}, "text": "naïve café", "position": 0},
        {"key": "b", "data": matrix[1].tolist(), "title": "Überblick", "source": "s.md"},
        {"key": "c", "data": matrix[2].tolist(), "metadata": {"k": [1, "二"]}},
        {"key": "d", "data": matrix[3].tolist(), "text": "", "source": None, "position": None},
    ]
    store.put_vectors(items)
    stored = store.get_vectors(["a", "b", "c", "d"], return_data=True)
    returned = np.asarray([chunk.embedding for chunk in stored], dtype=np.float32)
    assert returned.tobytes() == matrix.tobytes()
    assert [(c.text, c.title, c.source, c.position, c.metadata) for c in stored] == [
        ("naïve café", None, None, 0, {}),
        ("", "Überblick", "s.md", None, {}),
        ("", None, None, None, {"k": [1, "二"]}),
        ("", None, None, None, {}),
    ]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"key": 5}, r"vectors\[1\]: key must be a string, got 5$"),
        ({"key": "b", "title": 3}, r"vectors\[1\]: title must be a string, got 3$"),
        ({"key": "b", "position": "x"}, r"vectors\[1\]: position must be an integer, got 'x'$"),
        (
            {"key": "b", "metadata": [1]},
            r"vectors\[1\]: metadata must be a JSON object, got \[1\]$",
        ),
    ],
    ids=["key", "title", "position", "metadata"],
)
def test_put_vectors_refuses_a_field_of_the_wrong_type_in_one_line(
    tmp_path: Path, bad: dict, message: str
) -> None:
    """Items are checked a column at a time; a value of another type is left to ``Chunk``,
    which converts what it can (a numpy integer position) and refuses the rest."""
    with VectorStore(tmp_path / "index.duckdb", "hashing:4") as store:
        good = {"key": "a", "data": [1.0, 2.0, 3.0, 4.0], "position": np.int64(3)}
        with pytest.raises(ValueError, match=message) as raised:
            store.put_vectors([good, {"data": [1.0] * 4, **bad}])
        assert "\n" not in str(raised.value)
        assert store.count() == 0
        store.put_vectors([good])
        assert store.get_vectors(["a"])[0].position == 3


def test_etags_keep_the_recipe_existing_indexes_were_written_with(tmp_path: Path) -> None:
    """An etag is sha256 of title, 0x1f, text (and, for given vectors, 0x1f and the float32
    bytes), cut to 32 hex digits: a re-import of unchanged rows into an index written by an
    earlier version must find them unchanged."""

    def recipe(title: str | None, text: str, vector: np.ndarray | None) -> str:
        data = f"{title or ''}\x1f{text}".encode()
        if vector is not None:
            data += b"\x1f" + vector.astype(np.float32).tobytes()
        return hashlib.sha256(data).hexdigest()[:32]

    vector = np.linspace(-1, 1, 8, dtype=np.float32)
    with VectorStore(tmp_path / "index.duckdb", "hashing:8") as store:
        store.put_vectors([{"key": "v", "data": vector.tolist(), "title": "Ü", "text": "naïve"}])
        store.add_texts(["plain text"], ids=["t"])
        etags = dict(store.connection.execute("SELECT chunk_id, etag FROM chunks").fetchall())
    assert etags == {"v": recipe("Ü", "naïve", vector), "t": recipe(None, "plain text", None)}


def test_put_vectors_into_an_empty_index_gives_the_index_the_lookups_would(
    tmp_path: Path,
) -> None:
    """Into an empty index, ids are not looked up (none can exist). The same items written
    into an index that held another chunk, then deleted, must give the same chunks, postings
    and BM25 scores."""
    rng = np.random.default_rng(11)
    texts = ["duckdb stores vectors", "bm25 ranks exact tokens", "vectors and tokens v2.0"]
    items = [
        {"key": f"k{i}", "data": rng.standard_normal(8).tolist(), "text": text, "source": "s"}
        for i, text in enumerate(texts)
    ]
    built = []
    for name, first in (("empty", None), ("looked-up", "other")):
        with VectorStore(tmp_path / f"{name}.duckdb", "hashing:8") as store:
            if first:
                store.put_vectors([{"key": first, "data": [1.0] * 8, "text": "vectors"}])
            stats = store.put_vectors(items)
            store.delete_vectors([first] if first else [])
            postings = store.connection.execute(
                "SELECT c.chunk_id, t.term, p.tf FROM postings p JOIN terms t USING (term_id)"
                " JOIN chunks c USING (key) ORDER BY ALL"
            ).fetchall()
            ranked = [hit.chunk.chunk_id for hit in store.query_text("vectors tokens", 3)]
            scores = [hit.score for hit in store.query_text("vectors tokens", 3)]
            built.append((stats, store.manifest.content_hash, postings, ranked, scores))
    assert built[0] == built[1]
    assert built[0][0].added == 3


def test_an_id_repeated_in_a_later_batch_of_vectors_is_refused_in_an_empty_index(
    store: VectorStore,
) -> None:
    """The empty-index path looks no id up: a repeat must still be caught, not reach the
    primary key half-written."""
    dimension = store.embedder.dimension
    batches = [
        ([Chunk(chunk_id=f"c{i}", text="t") for i in range(3)], np.ones((3, dimension))),
        ([Chunk(chunk_id="c2", text="again")], np.ones((1, dimension))),
    ]
    with pytest.raises(ValueError, match=r"duplicate ids in one write: \['c2'\]"):
        store.put_vector_batches(batches, stamp=datetime.now(UTC))
    assert store.count() == 0


def test_the_fusion_follows_the_settings_and_the_recorded_weight(filled_store: VectorStore) -> None:
    """The fused settings are kept between queries, and made again when what they come from
    is replaced: the index's recorded weight, or the settings (even by settings of equal
    values, which differ in whether BM25's share was set)."""
    assert filled_store.fusion.lexical_weight == STATIC_LEXICAL_WEIGHT  # the static model's
    assert filled_store.fusion is filled_store.fusion
    filled_store.record_lexical_weight(0.3)
    assert filled_store.fusion.lexical_weight == 0.3
    filled_store.settings.fusion = FusionSettings(lexical_weight=FusionSettings().lexical_weight)
    assert filled_store.fusion.lexical_weight == FusionSettings().lexical_weight
    filled_store.settings.fusion = FusionSettings()
    assert filled_store.fusion.lexical_weight == 0.3


def test_embeddings_are_stored_as_raw_floats(tmp_path: Path) -> None:
    """DuckDB would pick ALPRD for the embedding column, which past a full row group takes 59%
    more blocks than the raw floats and reads slower (``db.FLOAT_CODECS``)."""
    path = tmp_path / "raw.duckdb"
    vectors = np.random.default_rng(0).normal(size=(3_000, 256)).astype(np.float32)
    with VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.put_vectors(
            [{"key": f"k{i}", "data": {"float32": v}, "text": "t"} for i, v in enumerate(vectors)]
        )
    with duckdb.connect(str(path), read_only=True) as connection:
        codecs = connection.sql(
            "SELECT DISTINCT compression FROM pragma_storage_info('chunks')"
            " WHERE column_name = 'embedding' AND segment_type = 'FLOAT'"
        ).fetchall()
    assert codecs == [("Uncompressed",)]
    with VectorStore(path, model_path=STATIC_MODEL, read_only=True) as reopened:
        hit = reopened.query_vectors(vectors[7], top_k=1)[0]
        assert hit.chunk.chunk_id == "k7"


def test_a_stream_of_writes_checkpoints_on_close_not_on_every_commit(tmp_path: Path) -> None:
    """Each of these writes passes DuckDB's default WAL limit (16 MB), where a commit
    checkpoints; the index raises it, so only ``close`` folds the WAL into the file."""
    path = tmp_path / "stream.duckdb"
    rng = np.random.default_rng(0)
    store = VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL)
    for batch in range(2):
        vectors = rng.normal(size=(6_000, 256)).astype(np.float32)
        store.put_vectors(
            [
                {
                    "key": f"b{batch}-{i}",
                    "data": {"float32": vector},
                    "text": f"chunk {i} " + "x" * 2_000,
                }
                for i, vector in enumerate(vectors)
            ]
        )
        assert Path(f"{path}.wal").stat().st_size > 16 << 20
    store.close()
    assert not Path(f"{path}.wal").exists()
    with VectorStore(path, model_path=STATIC_MODEL, read_only=True) as reopened:
        assert reopened.count() == 12_000
