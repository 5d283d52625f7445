"""The chunk row is declared once, as ``models.Chunk``: every other form of it (the table's
columns, a write's columns, the S3-shaped items, the Parquet columns, the hit JSON) is checked
against that declaration here, so a field cannot be added in one place only."""

from __future__ import annotations

import typing
from dataclasses import fields

import numpy as np

from duckdb_vectors import inputs, parquet_import, rows
from duckdb_vectors.index import chunk_table
from duckdb_vectors.models import GIVEN_FIELDS, MADE_BY_THE_STORE, Chunk
from duckdb_vectors.rendering import Hit

# Columns of the table that are no field of a Chunk: its row key, its BM25 length, and its
# part of the content hash.
TABLE_ONLY = {"key", "token_count", "content_digest"}


def test_the_table_holds_every_field_and_only_its_own_columns_besides() -> None:
    names = [column.name for column in chunk_table.COLUMNS]
    assert set(names) - TABLE_ONLY == set(Chunk.model_fields)
    assert len(names) == len(set(names))
    assert set(chunk_table.CHUNK_FIELDS) == set(Chunk.model_fields) - {"embedding"}


def test_the_fields_outside_the_etag_are_given_ones() -> None:
    outside = {column.name for column in chunk_table.COLUMNS if column.outside_etag}
    assert outside <= set(GIVEN_FIELDS)
    assert {"text", "title"}.isdisjoint(outside)  # the etag is the hash of these


def _written() -> rows.ChunkColumns:
    return rows.ChunkColumns.of([Chunk(chunk_id="a", text="some words", title="T")])


def test_a_write_has_a_column_per_given_field() -> None:
    columns = {f.name for f in fields(rows.ChunkColumns)}
    assert columns == set(GIVEN_FIELDS) - {"metadata"} | {"metadata_json"}


def _element_types(hint: object) -> set[object]:
    """The types a ``list[X]`` column's values may have."""
    (element,) = typing.get_args(hint)
    return set(typing.get_args(element)) or {element}


def test_every_text_column_of_a_write_is_checked_for_utf8() -> None:
    hints = typing.get_type_hints(rows.ChunkColumns)
    text = {name for name, hint in hints.items() if str in _element_types(hint)}
    assert set(rows.TEXT_COLUMNS) == text


def test_encode_gives_every_column_insert_does_not_set() -> None:
    encoded = chunk_table.encode(_written(), np.array([1]), ["e"], np.zeros((1, 4)), "english")
    set_by_insert = {"stamped_at", "content_digest"}
    expected = {column.name for column in chunk_table.COLUMNS} - set_by_insert
    assert set(encoded.columns) == expected


def test_items_and_parquet_rows_carry_the_given_fields() -> None:
    assert set(inputs._ITEM_TYPES) == set(GIVEN_FIELDS)
    assert set(parquet_import.COLUMNS) == set(GIVEN_FIELDS) | {"embedding"}


def test_a_hit_shows_the_given_fields() -> None:
    assert set(Hit.model_fields) & set(Chunk.model_fields) == set(GIVEN_FIELDS)
    assert set(Hit.model_fields).isdisjoint(MADE_BY_THE_STORE)
