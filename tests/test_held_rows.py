"""The rows a snapshot holds for its hits (``held_rows``) give back exactly the chunks and
documents DuckDB reads, whatever the scripts, the NULLs and the number of reads they took."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import DEFAULT_BACKEND, STATIC_MODEL

from duckdb_vectors import VectorStore
from duckdb_vectors.index import chunk_table, held_rows

TEXTS = [
    "plain ASCII text",
    "Москва — столица России",
    "数据库的会社",
    "café naïve résumé 😀",
    "",
    "a\x00NUL and a\ttab",
]


def test_held_rows_give_back_what_duckdb_reads(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(
            TEXTS,
            ids=[f"id-{i}-é" for i in range(len(TEXTS))],
            metadatas=[{"n": i} if i % 2 else None for i in range(len(TEXTS))],
            titles=["Заголовок", None, "t", None, "t", None],
            sources=["a.md", "a.md", None, "数据.md", None, "a.md"],
            positions=[0, 1, None, 3, None, 5],
        )
        store.add_texts(["a later write"], ids=["later"], sources=["a.md"])
        keys = np.sort(store.connection.sql("SELECT key FROM chunks").fetchnumpy()["key"])
        monkeypatch.setattr(held_rows, "ROWS_PER_READ", 3)  # read in several parts
        rows = held_rows.read(store.connection, keys)
        expected = chunk_table.by_keys(store.connection, keys)
        documents = chunk_table.documents_of(store.connection, keys)
    assert len(rows) == len(keys) == len(TEXTS) + 1
    for row, chunk in enumerate(expected):
        held = rows.chunk(row)
        assert held == chunk
        assert list(held.__dict__) == list(chunk.__dict__)  # fields in declaration order
        assert rows.document(row) == documents[row]
