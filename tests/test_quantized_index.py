"""``quantize="int8"`` / ``--quantize int8``: an index that also stores int8 codes of its vectors
and searches those, rescoring the best candidates exactly; the codes follow every write."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import duckdb
import numpy as np
import pytest
from conftest import (
    DEFAULT_BACKEND,
    DUCKDB_DOCS,
    STATIC_MODEL,
    XQUAD_QUESTIONS,
    run_cli,
)

from duckdb_vectors import (
    IndexMismatchError,
    InvalidSettingError,
    NotAnIndexError,
    VectorStore,
    index_folder,
)
from duckdb_vectors.index.schema import SCHEMA_VERSION
from duckdb_vectors.index.vector_codes import int8_codes

TOP_K = 10
QUESTIONS = 60


def codes_in_step(store: VectorStore) -> None:
    """Every chunk has exactly the int8 codes of its float32 vector, and nothing else has any."""
    stored = store.connection.sql(
        "SELECT c.key, c.embedding, v.codes FROM chunks c FULL JOIN vector_codes v USING (key)"
        " ORDER BY key"
    ).fetchnumpy()
    assert len(stored["key"]) == store.count()
    embeddings = np.stack(stored["embedding"]).astype(np.float32)
    np.testing.assert_array_equal(np.stack(stored["codes"]), int8_codes(embeddings))


def recall(found: list[list[str]], exact: list[list[str]]) -> float:
    return float(
        np.mean([len(set(a) & set(b)) / len(b) for a, b in zip(found, exact, strict=True) if b])
    )


@pytest.fixture(scope="module")
def docs_indexes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """~2,000 chunks of the DuckDB docs, as a float32 index and the same index quantized."""
    root = tmp_path_factory.mktemp("quantized")
    docs = root / "docs"
    for folder in ("sql", "guides", "data"):
        shutil.copytree(DUCKDB_DOCS / folder, docs / folder)
    exact = root / "exact.duckdb"
    with VectorStore(exact, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, docs, progress=False)
    quantized = root / "int8.duckdb"
    shutil.copy(exact, quantized)
    VectorStore(quantized, quantize="int8").close()  # an existing index, converted
    return exact, quantized


@pytest.fixture(scope="module")
def opened(docs_indexes: tuple[Path, Path]) -> Iterator[tuple[VectorStore, VectorStore]]:
    """Both indexes open read-only, their snapshots loaded."""
    with ExitStack() as stack:
        stores = [
            stack.enter_context(VectorStore(path, model_path=STATIC_MODEL, read_only=True))
            for path in docs_indexes
        ]
        for store in stores:
            store.warm_up()
        yield stores[0], stores[1]


@pytest.fixture(scope="module")
def questions(opened: tuple[VectorStore, VectorStore]) -> tuple[list[str], np.ndarray]:
    """Real questions (XQuAD), and their query vectors."""
    lines = XQUAD_QUESTIONS.read_text(encoding="utf-8").splitlines()[:QUESTIONS]
    texts = [json.loads(line)["text"] for line in lines]
    return texts, opened[0].embedder.embed_query(texts)


def top_ids(store: VectorStore, questions: tuple[list[str], np.ndarray], **options) -> list:
    return [
        [hit.chunk.chunk_id for hit in store.query(text, TOP_K, vector=vector, **options)]
        for text, vector in zip(*questions, strict=True)
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    "options",
    [
        {"hybrid": False},
        {"hybrid": True},
        {"hybrid": False, "where": "source LIKE 'sql/%'"},
        {"hybrid": True, "filter": {"title": {"$exists": True}}, "one_per_source": True},
    ],
    ids=["vector", "hybrid", "where", "filter-one-per-source"],
)
def test_int8_search_finds_what_exact_search_finds(
    opened: tuple[VectorStore, VectorStore], questions: tuple[list[str], np.ndarray], options: dict
) -> None:
    exact, quantized = opened
    assert quantized.quantization == "int8" and exact.quantization is None
    found = top_ids(quantized, questions, **options)
    assert recall(found, top_ids(exact, questions, **options)) >= 0.99
    if "where" in options:
        assert all(hit.startswith("sql/") for hits in found for hit in hits)


@pytest.mark.slow
def test_the_vectors_held_in_memory_take_a_quarter_of_the_bytes(
    opened: tuple[VectorStore, VectorStore],
) -> None:
    exact, quantized = opened
    held = exact._memory.vectors.nbytes
    assert held == exact.count() * exact.manifest.dimension * 4
    assert quantized._memory.vectors.int8.codes.dtype == np.int8
    # the codes, plus one float32 per row: (256 + 4) / (4 * 256) of the float32 matrix
    assert quantized._memory.vectors.nbytes / held == pytest.approx(0.254, abs=0.001)


@pytest.mark.slow
def test_the_manifest_records_it_and_later_opens_keep_it(db_path: Path) -> None:
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL, quantize="int8") as store:
        store.add_texts(["ducks swim on the pond", "geese fly south"], ids=["a", "b"])
        assert store.manifest.quantization == "int8"
    with VectorStore(db_path, model_path=STATIC_MODEL) as store:  # no flag: still int8
        assert store.quantization == "int8"
        store.add_texts(["swans glide on the lake"], ids=["c"])
        assert store.manifest.quantization == "int8"
        codes_in_step(store)
        assert store.query("swans", top_k=1)[0].chunk.chunk_id == "c"
    with VectorStore(db_path, model_path=STATIC_MODEL, read_only=True) as store:
        assert store.report().manifest["quantization"] == "int8"


def test_an_index_without_it_records_none(db_path: Path) -> None:
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(["plain"])
        assert store.manifest.quantization is None
        assert store.connection.sql("SELECT count(*) FROM vector_codes").fetchall() == [(0,)]


def test_codes_follow_every_write(db_path: Path) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(40, 16)).astype(np.float32)
    items = [
        {"key": f"v{i}", "data": {"float32": vector.tolist()}, "text": f"item {i}",
         "source": f"{'old' if i < 10 else 'new'}/{i}.md"}
        for i, vector in enumerate(vectors)
    ]  # fmt: skip
    with VectorStore(db_path, "hashing:16", quantize="int8") as store:
        store.put_vectors(items)
        codes_in_step(store)
        # The newest chunk, changed: its key is freed and given to the new row.
        store.put_vectors([{**items[-1], "data": {"float32": (-vectors[-1]).tolist()}}])
        codes_in_step(store)
        store.add_texts(["a text chunk"], ids=["v0"])  # a vector chunk becomes a text one
        codes_in_step(store)
        assert store.delete_vectors(["v1", "v2"]) == 2
        codes_in_step(store)
        assert store.delete_where(where="source LIKE 'old/%'") == 7
        codes_in_step(store)
        assert store.count() == 31
        top = store.query_vectors(-vectors[-1], top_k=1)[0]
        assert top.chunk.chunk_id == "v39" and top.score == pytest.approx(1.0, abs=1e-6)


def test_a_read_write_open_converts_an_index_and_a_read_only_one_says_how(db_path: Path) -> None:
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(["first", "second"])
    with pytest.raises(IndexMismatchError) as refused:
        VectorStore(db_path, read_only=True, quantize="int8")
    assert "upgrade --db" in str(refused.value) and "\n" not in str(refused.value)
    with VectorStore(db_path, quantize="int8") as store:  # converted on open
        assert store.manifest.quantization == "int8"
        codes_in_step(store)


def test_the_cli_indexes_quantized_and_reports_it(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Ducks\n\nDucks swim on the pond.\n")
    (docs / "b.md").write_text("# Geese\n\nGeese fly south in winter.\n")
    db = tmp_path / "docs.duckdb"
    result = run_cli("index", str(docs), "--db", str(db), "--quantize", "int8")
    assert result.exit_code == 0, result.stderr
    report = json.loads(run_cli("report", "--db", str(db), "--json").stdout)
    assert report["manifest"]["quantization"] == "int8"
    found = run_cli("search", "geese", "--db", str(db), "--json")
    assert json.loads(found.stdout)["results"][0]["source"] == "b.md"


def test_the_cli_converts_with_upgrade(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Ducks\n\nDucks swim on the pond.\n")
    db = tmp_path / "docs.duckdb"
    assert run_cli("index", str(docs), "--db", str(db)).exit_code == 0
    result = run_cli("upgrade", "--db", str(db), "--quantize", "int8")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip().endswith("quantization int8")


@pytest.mark.slow
def test_parquet_import_writes_codes(tmp_path: Path) -> None:
    vectors = np.random.default_rng(5).normal(size=(50, 256)).astype(np.float32)
    parquet = tmp_path / "rows.parquet"
    with duckdb.connect() as connection:
        connection.execute(
            "CREATE TABLE rows AS SELECT 'c' || i AS chunk_id, 'text ' || i AS text,"
            " $1[i + 1]::FLOAT[256] AS embedding FROM range(50) t(i)",
            [vectors.tolist()],
        )
        connection.execute(f"COPY rows TO '{parquet}' (FORMAT parquet)")
    db = tmp_path / "imported.duckdb"
    result = run_cli(
        "index", "--from-parquet", str(parquet), "--db", str(db),
        "--backend", DEFAULT_BACKEND, "--quantize", "int8",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    with VectorStore(db, model_path=STATIC_MODEL) as store:
        assert store.manifest.quantization == "int8"
        codes_in_step(store)
        assert store.query_vectors(vectors[7], top_k=1)[0].chunk.chunk_id == "c7"


def test_a_bad_value_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_cli(
        "index", str(tmp_path), "--db", str(tmp_path / "x.duckdb"), "--quantize", "int4"
    )
    assert result.exit_code == 2
    assert "Invalid value for '--quantize': 'int4' is not 'int8'" in result.stderr
    monkeypatch.setenv("DUCKDB_VECTORS_QUANTIZE", "int4")
    with pytest.raises(InvalidSettingError) as raised:
        VectorStore(tmp_path / "x.duckdb")
    message = str(raised.value)
    assert message.startswith("DUCKDB_VECTORS_QUANTIZE='int4' is not valid") and "\n" not in message


def as_written_by_version_4(db_path: Path) -> None:
    """What schema version 4 left: no ``vector_codes`` table."""
    with duckdb.connect(str(db_path)) as connection:
        connection.execute("DELETE FROM schema_migrations WHERE version > 4")
        connection.execute("DROP TABLE vector_codes")


@pytest.mark.slow
def test_an_index_of_schema_version_4_is_searched_read_only_and_quantized_once_migrated(
    db_path: Path,
) -> None:
    texts = ["apples are red", "the sky is blue", "the sea is blue too"]
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(texts)
    as_written_by_version_4(db_path)
    with VectorStore(db_path, model_path=STATIC_MODEL, read_only=True) as store:
        assert store.query("blue sky", top_k=1)[0].chunk.text == "the sky is blue"
    with VectorStore(db_path, model_path=STATIC_MODEL, quantize="int8") as store:
        codes_in_step(store)
        assert store.query("blue sky", top_k=1)[0].chunk.text == "the sky is blue"
    with duckdb.connect(str(db_path), read_only=True) as connection:
        assert connection.sql("SELECT max(version) FROM schema_migrations").fetchall() == [
            (SCHEMA_VERSION,)
        ]


@pytest.mark.slow
def test_codes_that_do_not_match_the_chunks_are_one_clear_error(db_path: Path) -> None:
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL, quantize="int8") as store:
        store.add_texts(["one", "two"])
    with duckdb.connect(str(db_path)) as connection:  # damage: a chunk loses its codes
        connection.execute("DELETE FROM vector_codes WHERE key = 1")
    store = VectorStore(db_path, model_path=STATIC_MODEL, read_only=True)
    with store, pytest.raises(NotAnIndexError, match=r"codes \(vector_codes\) do not match"):
        store.query("one")
