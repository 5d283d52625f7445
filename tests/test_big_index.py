"""An index past DuckDB's small scan pool (``db.SCAN_MEMORY_LIMIT``), with a large vocabulary:
every path that holds the pool small — the snapshot's vectors, int8 codes and postings, the SQL
vector scan — and those beside it (fetch, report, MCP) must answer, read-only and read-write.

A million distinct terms once made the snapshot load fail with DuckDB's "Out of Memory":
its vocabulary was read while the vectors' scan held the database's pool at 16 MB."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import duckdb
import numpy as np
import pytest
from conftest import SCRIPT, STATIC_MODEL, as_written_by_version_8, run_cli
from mcp import Client, StdioServerParameters

from duckdb_vectors import VectorStore
from duckdb_vectors.fetching import fetch
from duckdb_vectors.index.db import SCAN_MEMORY_LIMIT

pytestmark = pytest.mark.slow

ROWS = 100_000
TERMS_PER_ROW = 10  # a million distinct terms, as many as the failing index had
DIMENSION = 256
CHUNKS_PER_SOURCE = 20


def write_rows(path: Path) -> None:
    """Rows whose texts share two common words and carry ten of their own."""
    with duckdb.connect() as connection:
        connection.execute("SELECT setseed(0.29)")
        connection.execute(
            f"""COPY (
                SELECT 'c' || i AS chunk_id,
                       'doc-' || (i // {CHUNKS_PER_SOURCE}) || '.md' AS source,
                       (i % {CHUNKS_PER_SOURCE})::INTEGER AS position,
                       'w' || (i % 97) || ' w' || (i % 13) || ' ' || array_to_string(list_transform(
                           range({TERMS_PER_ROW}), lambda t: 'item' || i || 'x' || t), ' ') AS text,
                       list_transform(range({DIMENSION}), lambda d: (random() - 0.5)::FLOAT)
                           AS embedding
                FROM range({ROWS}) t(i)
            ) TO '{path}' (FORMAT parquet)"""
        )


@pytest.fixture(scope="module")
def big_indexes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same rows as a float32 index and as an int8 one, built as a user would."""
    folder = tmp_path_factory.mktemp("big")
    rows = folder / "rows.parquet"
    write_rows(rows)
    float32 = folder / "float32.duckdb"
    backend = "fastembed:minishlab/potion-multilingual-128M"
    built = run_cli(
        "index", "--from-parquet", str(rows), "--db", str(float32), "--backend", backend
    )
    assert built.exit_code == 0, built.stderr
    int8 = folder / "int8.duckdb"
    shutil.copy(float32, int8)
    upgraded = run_cli("upgrade", "--db", str(int8), "--quantize", "int8")
    assert upgraded.exit_code == 0, upgraded.stderr
    rows.unlink()
    return {"float32": float32, "int8": int8}


def test_the_index_is_past_the_small_pool(big_indexes: dict[str, Path]) -> None:
    assert ROWS * DIMENSION * 4 > 4 * SCAN_MEMORY_LIMIT
    with VectorStore(big_indexes["float32"], read_only=True) as store:
        assert store.report().chunk_count == ROWS


def stored_vector(store: VectorStore, chunk_id: str) -> np.ndarray:
    return np.asarray(store.get_vectors([chunk_id], return_data=True)[0].embedding)


def assert_answers(store: VectorStore) -> None:
    """The vector ranking finds a chunk by its own vector, BM25 a chunk by its own term."""
    assert store.query_vectors(stored_vector(store, "c4321"), top_k=3)[0].chunk.chunk_id == "c4321"
    hits = store.query_text("item98765x3", top_k=3)
    assert hits[0].chunk.chunk_id == "c98765"


@pytest.mark.parametrize("kind", ["float32", "int8"])
@pytest.mark.parametrize("read_only", [True, False], ids=["read-only", "read-write"])
def test_the_in_memory_index_loads_and_answers(
    big_indexes: dict[str, Path], kind: str, read_only: bool, tmp_path: Path
) -> None:
    path = big_indexes[kind]
    if not read_only:
        path = Path(shutil.copy(path, tmp_path / path.name))
    with VectorStore(path, read_only=read_only, model_path=STATIC_MODEL) as store:
        store.warm_up()
        assert store._memory is not None and len(store._memory) == ROWS
        assert_answers(store)


def test_an_index_of_schema_8_loads_read_only_and_answers(
    big_indexes: dict[str, Path], tmp_path: Path
) -> None:
    """Its terms keep the digests schema 9 dropped, a million of them."""
    path = Path(shutil.copy(big_indexes["float32"], tmp_path / "schema-8.duckdb"))
    with duckdb.connect(str(path)) as connection:
        as_written_by_version_8(connection)
    with VectorStore(path, read_only=True, model_path=STATIC_MODEL) as store:
        store.warm_up()
        assert store._memory is not None and len(store._memory) == ROWS
        assert_answers(store)


def test_a_load_inside_a_write_transaction_answers(
    big_indexes: dict[str, Path], tmp_path: Path
) -> None:
    """Inside a transaction the snapshot loads what the transaction sees, and DuckDB's cache is
    left as it is (lowering its limit there would abort the transaction)."""
    path = Path(shutil.copy(big_indexes["float32"], tmp_path / "written.duckdb"))
    with VectorStore(path, model_path=STATIC_MODEL) as store, store.transaction():
        store.delete_vectors(["c0"])
        assert_answers(store)
        assert store.count() == ROWS - 1


@pytest.mark.parametrize("kind", ["float32", "int8"])
def test_sql_answers_fetch_and_report_on_a_big_index(
    big_indexes: dict[str, Path], kind: str
) -> None:
    with VectorStore(
        big_indexes[kind], read_only=True, memory_index=False, model_path=STATIC_MODEL
    ) as store:
        assert_answers(store)
        fetched = fetch(store, "c4325", context=2)
        assert fetched.chunk_ids == [f"c{i}" for i in range(4323, 4328)]
        assert len(fetch(store, "doc-7.md").chunk_ids) == CHUNKS_PER_SOURCE
        assert store.report().chunk_count == ROWS


def test_the_one_shot_cli_search_answers(big_indexes: dict[str, Path]) -> None:
    """A one-shot search answers from SQL: its vector scan holds the pool small."""
    found = run_cli("search", "item555x5", "--db", str(big_indexes["float32"]), "--json")
    assert found.exit_code == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["chunk_id"] == "c555"


def test_the_mcp_server_searches_a_big_index(big_indexes: dict[str, Path]) -> None:
    parameters = StdioServerParameters(
        command=SCRIPT,
        args=["mcp", "--db", str(big_indexes["int8"])],
        env={"DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL), "HF_HUB_OFFLINE": "1"},
    )

    async def scenario() -> None:
        async with Client(parameters, mode="legacy", read_timeout_seconds=120) as client:
            result = await client.call_tool("search", {"query": "item777x1", "top_k": 1})
            assert result.is_error is False, result.content
            assert result.structured_content["results"][0]["chunk_id"] == "c777"

    anyio.run(scenario)
