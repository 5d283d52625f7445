"""The ``documents`` table: one row per indexed file.

A row records the file's content hash and the chunker settings it was cut with, so an
unchanged file is skipped without being read into chunks again. A row whose chunks are not all
in the index any more (deleted, pruned) no longer vouches for the file: the next run re-chunks
it, and rows left with no chunk at all are dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb

from .db import column, registered


@dataclass(frozen=True)
class Document:
    """An indexed file."""

    source: str
    content_hash: str
    mime_type: str
    size: int
    chunk_count: int


def create(connection: duckdb.DuckDBPyConnection) -> None:
    """Schema 2: the table."""
    connection.execute(
        "CREATE TABLE IF NOT EXISTS documents ("
        " source VARCHAR PRIMARY KEY, content_hash VARCHAR NOT NULL, chunker VARCHAR NOT NULL,"
        " mime_type VARCHAR, size BIGINT, chunk_count INTEGER, indexed_at TIMESTAMPTZ)"
    )


def known(connection: duckdb.DuckDBPyConnection, prefix: str) -> dict[str, tuple[str, str]]:
    """Files under ``prefix`` whose chunks are all still in the index: (hash, chunker)."""
    rows = connection.execute(
        "SELECT d.source, d.content_hash, d.chunker FROM documents d"
        " JOIN (SELECT source, count(*) AS stored FROM chunks GROUP BY source) c USING (source)"
        " WHERE starts_with(d.source, $1) AND c.stored = d.chunk_count",
        [prefix],
    ).fetchall()
    return {source: (content_hash, chunker) for source, content_hash, chunker in rows}


def record(
    connection: duckdb.DuckDBPyConnection,
    documents: Sequence[Document],
    chunker_key: str,
    stamp: datetime,
) -> None:
    """Record (or replace) the rows of files just indexed."""
    if not documents:
        return
    rows = {
        "source": column([d.source for d in documents]),
        "content_hash": column([d.content_hash for d in documents]),
        "mime_type": column([d.mime_type for d in documents]),
        "size": column([d.size for d in documents], "int64"),
        "chunk_count": column([d.chunk_count for d in documents], "int32"),
    }
    with registered(connection, "indexed_documents", rows):
        connection.execute(
            "INSERT OR REPLACE INTO documents SELECT source, content_hash, $1, mime_type, size,"
            " chunk_count, $2 FROM indexed_documents",
            [chunker_key, stamp],
        )


def forget_orphans(connection: duckdb.DuckDBPyConnection, prefix: str = "") -> None:
    """Drop the rows under ``prefix`` of files that have no chunk left in the index."""
    connection.execute(
        "DELETE FROM documents WHERE starts_with(source, $1)"
        " AND source NOT IN (SELECT DISTINCT source FROM chunks WHERE source IS NOT NULL)",
        [prefix],
    )
