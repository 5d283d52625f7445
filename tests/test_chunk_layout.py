"""The chunk row is declared once, as ``models.Chunk``: every other form of it (a write's
columns, the S3-shaped items, the Parquet columns, the table and the hit JSON) is made from that
declaration. Here each field a writer gives goes in by every form and must come out of reads
and hits, so a field added to ``Chunk`` reaches every form or a test fails."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pytest

from duckdb_vectors import index_parquet, rows
from duckdb_vectors.index import chunk_table
from duckdb_vectors.models import GIVEN_FIELDS, MADE_BY_THE_STORE, Chunk, value_types
from duckdb_vectors.rendering import Hit, SearchOutput
from duckdb_vectors.store import VectorStore

# Columns of the table that are no field of a Chunk: its row key, its BM25 length, and its
# part of the content hash.
TABLE_ONLY = {"key", "token_count", "content_digest"}
BACKEND = "hashing:4"
# A DuckDB type to write each kind of field to Parquet as (the metadata as JSON text).
PARQUET_TYPES = {str: "VARCHAR", int: "INTEGER", dict: "VARCHAR"}


def test_the_table_holds_every_field_and_only_its_own_columns_besides() -> None:
    names = [column.name for column in chunk_table.COLUMNS]
    assert set(names) - TABLE_ONLY == set(Chunk.model_fields)
    assert len(names) == len(set(names))
    assert set(chunk_table.CHUNK_FIELDS) == set(Chunk.model_fields) - {"embedding"}


def test_the_fields_outside_the_etag_are_given_ones() -> None:
    outside = {column.name for column in chunk_table.COLUMNS if column.outside_etag}
    assert outside <= set(GIVEN_FIELDS)
    assert {"text", "title"}.isdisjoint(outside)  # the etag is the hash of these


def _kind(field: str) -> type:
    (kind,) = value_types(field) - {type(None)}
    return kind


def _value(field: str, row: int) -> object:
    """A value of ``field``'s type, other for each field and row."""
    kind = _kind(field)
    if kind is str:
        return f"{field} {row} é"
    if kind is int:
        return 7 + row
    if kind is dict:
        return {"field": field, "row": row}
    raise AssertionError(f"give a {kind.__name__} field such as {field} a value here")


def _given(count: int = 2) -> list[dict[str, object]]:
    return [{name: _value(name, row) for name in GIVEN_FIELDS} for row in range(count)]


def _parquet(path: Path, given: list[dict[str, object]], vectors: np.ndarray) -> Path:
    columns = ", ".join(f"{name} {PARQUET_TYPES[_kind(name)]}" for name in GIVEN_FIELDS)
    with duckdb.connect() as connection:
        connection.execute(f"CREATE TABLE rows ({columns}, embedding FLOAT[])")
        connection.executemany(
            f"INSERT INTO rows VALUES ({', '.join('?' * (len(GIVEN_FIELDS) + 1))})",
            [
                [json.dumps(v) if isinstance(v, dict) else v for v in row.values()] + [vector]
                for row, vector in zip(given, vectors.tolist(), strict=True)
            ],
        )
        connection.execute(f"COPY rows TO '{path}' (FORMAT parquet)")
    return path


def test_every_given_field_goes_in_by_each_form_and_comes_out_of_reads_and_hits(
    tmp_path: Path,
) -> None:
    given = _given()
    vectors = np.asarray([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]], dtype=np.float32)
    items = [
        {"key": row["chunk_id"], "data": {"float32": vector.tolist()}}
        | {name: value for name, value in row.items() if name != "chunk_id"}
        for row, vector in zip(given, vectors, strict=True)
    ]
    parquet = _parquet(tmp_path / "rows.parquet", given, vectors)
    writes = {
        "Chunk": lambda store: store.put_vector_batches(
            [([Chunk(**row) for row in given], vectors)], datetime.now(UTC)
        ),
        "put_vectors items": lambda store: store.put_vectors(items),
        "Parquet rows": lambda store: index_parquet(store, parquet),
    }
    for form, write in writes.items():
        with VectorStore(tmp_path / f"{form}.duckdb", BACKEND) as store:
            write(store)
            stored = store.get_vectors([row["chunk_id"] for row in given])
            assert [chunk.model_dump(include=set(GIVEN_FIELDS)) for chunk in stored] == given
            hits = SearchOutput.of("q", store.query_vectors(vectors[1], top_k=1)).results
            assert hits[0].model_dump(include=set(GIVEN_FIELDS)) == given[1], form


def test_a_write_has_a_column_per_given_field_or_fails() -> None:
    written = rows.ChunkColumns.of([Chunk(chunk_id="a", text="some words", title="T")])
    assert set(written.columns) == set(GIVEN_FIELDS)
    assert written.columns["metadata"] == ["{}"]  # as the table stores it
    with pytest.raises(TypeError, match="a write has the columns"):
        rows.ChunkColumns({name: [] for name in GIVEN_FIELDS if name != "title"})


@pytest.mark.parametrize("field", [name for name in GIVEN_FIELDS if _kind(name) in (str, dict)])
def test_every_text_field_of_a_write_is_checked_for_utf8(tmp_path: Path, field: str) -> None:
    bad = "\ud800"  # a lone surrogate, as undecodable bytes give
    item = {"key": "a", "data": [1.0, 0.0, 0.0, 0.0]}
    item[{"chunk_id": "key"}.get(field, field)] = {"k": bad} if field == "metadata" else bad
    with VectorStore(tmp_path / "index.duckdb", BACKEND) as store:
        with pytest.raises(ValueError, match=f"{field} of chunk 0 is not valid UTF-8"):
            store.put_vectors([item])
        assert store.count() == 0


def test_encode_gives_every_column_insert_does_not_set() -> None:
    written = rows.ChunkColumns.of([Chunk(chunk_id="a", text="some words", title="T")])
    encoded = chunk_table.encode(written, np.array([1]), ["e"], np.zeros((1, 4)), ["english"])
    set_by_insert = {"stamped_at", "content_digest"}
    expected = {column.name for column in chunk_table.COLUMNS} - set_by_insert
    assert set(encoded.columns) == expected


def test_a_hit_shows_the_given_fields_and_none_the_store_makes() -> None:
    assert set(Hit.model_fields) & set(Chunk.model_fields) == set(GIVEN_FIELDS)
    assert set(Hit.model_fields).isdisjoint(MADE_BY_THE_STORE)
