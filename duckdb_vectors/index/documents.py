"""The ``documents`` table: one row per indexed document.

A row records the document's content hash and the chunker settings it was cut with, so an
unchanged document is skipped without being read into chunks again, and what its source said
of it (``validators``: an ETag, a git blob), so the source can confirm it unchanged without
sending it again. A row whose chunks are not all
in the index any more (deleted, pruned) no longer vouches for the file: the next run re-chunks
it, and rows left with no chunk at all are dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import duckdb

from .db import column, registered


@dataclass(frozen=True)
class Document:
    """An indexed document."""

    source: str
    content_hash: str
    mime_type: str
    size: int
    chunk_count: int
    validators: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Known:
    """What the index holds of a document: enough to tell whether it changed."""

    content_hash: str
    chunker: str
    chunk_count: int
    validators: Mapping[str, str]


def create(connection: duckdb.DuckDBPyConnection) -> None:
    """Schema 2: the table."""
    connection.execute(
        "CREATE TABLE IF NOT EXISTS documents ("
        " source VARCHAR PRIMARY KEY, content_hash VARCHAR NOT NULL, chunker VARCHAR NOT NULL,"
        " mime_type VARCHAR, size BIGINT, chunk_count INTEGER, indexed_at TIMESTAMPTZ)"
    )


def add_validators(connection: duckdb.DuckDBPyConnection) -> None:
    """Schema 10: what a document's source said of it (a JSON object of strings)."""
    connection.execute("ALTER TABLE documents ADD COLUMN IF NOT EXISTS validators VARCHAR")


def known(connection: duckdb.DuckDBPyConnection, prefix: str) -> dict[str, Known]:
    """Documents under ``prefix`` whose chunks are all still in the index."""
    rows = connection.execute(
        "SELECT d.source, d.content_hash, d.chunker, d.chunk_count, d.validators FROM documents d"
        " JOIN (SELECT source, count(*) AS stored FROM chunks GROUP BY source) c USING (source)"
        " WHERE starts_with(d.source, $1) AND c.stored = d.chunk_count",
        [prefix],
    ).fetchall()
    return {
        source: Known(content_hash, chunker, count, json.loads(validators) if validators else {})
        for source, content_hash, chunker, count, validators in rows
    }


def record(
    connection: duckdb.DuckDBPyConnection,
    documents: Sequence[Document],
    chunker_key: str,
    stamp: datetime,
) -> None:
    """Record (or replace) the rows of documents just indexed."""
    if not documents:
        return
    rows = {
        "source": column([d.source for d in documents]),
        "content_hash": column([d.content_hash for d in documents]),
        "mime_type": column([d.mime_type for d in documents]),
        "size": column([d.size for d in documents], "int64"),
        "chunk_count": column([d.chunk_count for d in documents], "int32"),
        "validators": column([json.dumps(dict(d.validators)) for d in documents]),
    }
    with registered(connection, "indexed_documents", rows):
        connection.execute(
            "INSERT OR REPLACE INTO documents SELECT source, content_hash, $1, mime_type, size,"
            " chunk_count, $2, validators FROM indexed_documents",
            [chunker_key, stamp],
        )


def forget_orphans(connection: duckdb.DuckDBPyConnection, prefix: str = "") -> None:
    """Drop the rows under ``prefix`` of documents that have no chunk left in the index."""
    connection.execute(
        "DELETE FROM documents WHERE starts_with(source, $1)"
        " AND source NOT IN (SELECT DISTINCT source FROM chunks WHERE source IS NOT NULL)",
        [prefix],
    )
