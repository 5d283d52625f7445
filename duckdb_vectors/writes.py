"""How a batch of chunks is written: which ids are new or changed (by etag), which vectors can
be reused from the index, and the bulk statements that replace the rows.

A write is planned, then embedded, then applied. The store may embed a batch in a background
thread while it plans and applies others, so nothing here embeds and the embedding step
touches no DuckDB connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import duckdb
import numpy as np

from . import rows
from .db import column, registered, scalar
from .models import Chunk
from .schema import create_chunks_table, has_table


@dataclass(frozen=True)
class WriteStats:
    """What one write did.

    ``added`` ids were new and ``updated`` ones had new content; ``unchanged`` ones had the
    same etag and were only restamped. ``embedded`` counts the vectors computed: a new or
    updated chunk whose etag matches any stored chunk (a moved or repeated text) reuses its
    vector instead.
    """

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    embedded: int = 0

    def __add__(self, other: WriteStats) -> WriteStats:
        return WriteStats(
            self.added + other.added,
            self.updated + other.updated,
            self.unchanged + other.unchanged,
            self.embedded + other.embedded,
        )


@dataclass
class PlannedBatch:
    """A batch of chunks, checked and compared with the index, waiting for its vectors.

    Attributes:
        chunks: the batch, in the caller's order.
        etags: each chunk's content hash.
        metadata_json: each chunk's metadata, serialised.
        changed: positions of the chunks that are new or have new content.
        added: how many of the changed chunks have ids the index does not hold.
        given: the caller's vectors for the changed chunks (``put_vectors``), if any.
        reused: stored vectors for changed chunks whose etag the index already holds.
        to_embed: positions in ``changed`` whose vectors must be computed.
    """

    chunks: list[Chunk]
    etags: list[str]
    metadata_json: list[str]
    changed: list[int]
    added: int
    given: np.ndarray | None = None
    reused: dict[str, np.ndarray] = field(default_factory=dict)
    to_embed: list[int] = field(default_factory=list)

    def texts_to_embed(self) -> list[str]:
        return [rows.embedding_text(self.chunks[self.changed[j]]) for j in self.to_embed]

    def embeddings(self, computed: np.ndarray | None) -> np.ndarray | None:
        """The vectors of the changed chunks, from the caller, the index and ``computed``."""
        if self.given is not None or not self.changed:
            return self.given
        dimension = computed.shape[1] if computed is not None else None
        dimension = dimension or len(next(iter(self.reused.values())))
        matrix = np.empty((len(self.changed), dimension), dtype=np.float32)
        for j, i in enumerate(self.changed):
            if self.etags[i] in self.reused:
                matrix[j] = self.reused[self.etags[i]]
        if computed is not None:
            matrix[self.to_embed] = computed
        return matrix

    def stats(self) -> WriteStats:
        return WriteStats(
            added=self.added,
            updated=len(self.changed) - self.added,
            unchanged=len(self.chunks) - len(self.changed),
            embedded=len(self.to_embed),
        )


def plan_batch(
    connection: duckdb.DuckDBPyConnection,
    chunks: list[Chunk],
    vectors: np.ndarray | None = None,
    seen_ids: set[str] | None = None,
) -> PlannedBatch:
    """Check ``chunks`` and find what must be written and embedded.

    Args:
        connection: the index.
        chunks: one batch.
        vectors: the caller's vectors, one row per chunk (else vectors are computed).
        seen_ids: ids of earlier batches of the same write; a repeated id is an error.
    """
    rows.check_unique_ids(chunks, seen_ids)
    metadata_json = [rows.metadata_json(chunk, index) for index, chunk in enumerate(chunks)]
    rows.check_text_fields(chunks, metadata_json)
    etags = [
        rows.etag(chunk, None if vectors is None else vectors[index])
        for index, chunk in enumerate(chunks)
    ]
    indexed = has_table(connection, "chunks")
    existing = _existing_etags(connection, [chunk.chunk_id for chunk in chunks]) if indexed else {}
    changed = [i for i, chunk in enumerate(chunks) if existing.get(chunk.chunk_id) != etags[i]]
    added = sum(1 for i in changed if chunks[i].chunk_id not in existing)
    batch = PlannedBatch(chunks, etags, metadata_json, changed, added)
    if vectors is not None:
        batch.given = vectors[changed]
    elif changed:
        if indexed:
            batch.reused = _stored_embeddings(connection, [etags[i] for i in changed])
        batch.to_embed = [j for j, i in enumerate(changed) if etags[i] not in batch.reused]
    return batch


def apply_batch(
    connection: duckdb.DuckDBPyConnection,
    batch: PlannedBatch,
    embeddings: np.ndarray | None,
    stamp: datetime,
) -> WriteStats:
    """Replace the changed chunks (rows and postings) and restamp the unchanged ones."""
    if batch.changed and embeddings is not None:
        create_chunks_table(connection, embeddings.shape[1])
        _replace_changed(connection, batch, embeddings, stamp)
    _restamp_unchanged(connection, batch, stamp)
    return batch.stats()


def delete_keys(connection: duckdb.DuckDBPyConnection, keys: np.ndarray) -> None:
    """Delete chunks and their postings by row key."""
    if len(keys) == 0:
        return
    key_list = [int(key) for key in keys]
    connection.execute(
        "DELETE FROM postings WHERE key IN (SELECT unnest($1::BIGINT[]))", [key_list]
    )
    connection.execute("DELETE FROM chunks WHERE key IN (SELECT unnest($1::BIGINT[]))", [key_list])


def insert_postings(connection: duckdb.DuckDBPyConnection, table: str) -> None:
    """Count the postings of ``table``'s rows from their ``key`` and joined ``tokens``."""
    connection.execute(
        "INSERT INTO postings SELECT term, key, CAST(count(*) AS INTEGER) FROM"
        f" (SELECT key, unnest(string_split(tokens, ' ')) AS term FROM {table})"
        " WHERE term <> '' GROUP BY key, term"
    )


def _existing_etags(connection: duckdb.DuckDBPyConnection, chunk_ids: list[str]) -> dict[str, str]:
    found = connection.execute(
        "SELECT chunk_id, etag FROM chunks WHERE chunk_id IN (SELECT unnest($1::VARCHAR[]))",
        [chunk_ids],
    ).fetchall()
    return dict(found)


def _stored_embeddings(
    connection: duckdb.DuckDBPyConnection, etags: list[str]
) -> dict[str, np.ndarray]:
    # fetchnumpy: each vector arrives as a float32 array, not a list of Python floats (which
    # made this lookup a sixth of re-indexing a folder of near-copies).
    found = connection.execute(
        "SELECT DISTINCT ON (etag) etag, embedding FROM chunks"
        " WHERE etag IN (SELECT unnest($1::VARCHAR[]))",
        [list(set(etags))],
    ).fetchnumpy()
    return dict(zip(found["etag"].tolist(), found["embedding"], strict=True))


def _replace_changed(
    connection: duckdb.DuckDBPyConnection,
    batch: PlannedBatch,
    embeddings: np.ndarray,
    stamp: datetime,
) -> None:
    chunks = [batch.chunks[i] for i in batch.changed]
    # Looked up now, not when the batch was planned: the chunk iterator runs in between and
    # may itself write to the store.
    old = connection.execute(
        "SELECT key FROM chunks WHERE chunk_id IN (SELECT unnest($1::VARCHAR[]))",
        [[chunk.chunk_id for chunk in chunks]],
    ).fetchnumpy()["key"]
    delete_keys(connection, old)
    first_key = int(scalar(connection, "SELECT coalesce(max(key), 0) + 1 FROM chunks"))
    keys = np.arange(first_key, first_key + len(chunks), dtype=np.int64)
    chunk_rows = rows.new_rows(
        chunks,
        keys,
        [batch.etags[i] for i in batch.changed],
        [batch.metadata_json[i] for i in batch.changed],
        embeddings,
    )
    dimension = embeddings.shape[1]
    with registered(connection, "new_chunks", chunk_rows):
        connection.execute(
            "INSERT INTO chunks (key, chunk_id, text, source, position, title, metadata, etag,"
            " stamped_at, token_count, embedding) SELECT key, chunk_id, text, source, position,"
            f" title, metadata, etag, $1, token_count, CAST(embedding AS FLOAT[{dimension}])"
            " FROM new_chunks",
            [stamp],
        )
        insert_postings(connection, "new_chunks")


def _restamp_unchanged(
    connection: duckdb.DuckDBPyConnection, batch: PlannedBatch, stamp: datetime
) -> None:
    changed = set(batch.changed)
    same = [i for i in range(len(batch.chunks)) if i not in changed]
    if not same:
        return
    chunks = batch.chunks
    updates = {
        "chunk_id": column([chunks[i].chunk_id for i in same]),
        "source": column([chunks[i].source for i in same]),
        "position": column([chunks[i].position for i in same], "int32"),
        "metadata": column([batch.metadata_json[i] for i in same]),
    }
    with registered(connection, "unchanged_chunks", updates):
        connection.execute(
            "UPDATE chunks SET source = u.source, position = u.position,"
            " metadata = CAST(u.metadata AS JSON), stamped_at = $1"
            " FROM unchanged_chunks u WHERE chunks.chunk_id = u.chunk_id",
            [stamp],
        )
