"""How a batch of chunks is written: which ids are new or changed (by etag), which vectors can
be reused from the index, and the statements that replace the rows.

A write is planned, then embedded, then applied; a batch may be embedded in a background
thread, so the embedding step touches no DuckDB connection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice

import duckdb
import numpy as np

from . import rows
from .embedders import Embedder
from .index import chunk_table, postings
from .index.db import threads_reserved
from .index.languages import Languages
from .models import Chunk

# Chunks embedded and written together: large (each batch costs a dozen statements), yet small
# enough to keep the embedding thread busy.
WRITE_BATCH = 1024


@dataclass(frozen=True)
class WriteStats:
    """What one write did: ``added`` ids were new, ``updated`` ones had new content,
    ``unchanged`` ones the same etag (only restamped). ``embedded`` counts the vectors
    computed: a chunk whose etag any stored chunk has (a moved or repeated text) reuses its
    vector."""

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
        changed: positions of the chunks that are new or have new content.
        added: how many of the changed chunks have ids the index does not hold.
        given: the caller's vectors for the changed chunks (``put_vectors``), if any.
        reused: stored vectors for changed chunks whose etag the index already holds.
        to_embed: positions in ``changed`` whose vectors must be computed.
        known_new: none of the ids can be in the index, so none is looked up or replaced.
    """

    chunks: rows.ChunkColumns
    etags: list[str]
    changed: list[int]
    added: int
    given: np.ndarray | None = None
    reused: dict[str, np.ndarray] = field(default_factory=dict)
    to_embed: list[int] = field(default_factory=list)
    known_new: bool = False

    def texts_to_embed(self) -> list[str]:
        return self.chunks.take([self.changed[j] for j in self.to_embed]).embedding_texts()

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
    chunks: rows.ChunkColumns,
    vectors: np.ndarray | None = None,
    seen_ids: set[str] | None = None,
    known_new: bool = False,
) -> PlannedBatch:
    """Check ``chunks`` and find what must be written and embedded.

    Args:
        connection: the index.
        chunks: one batch.
        vectors: the caller's vectors, one row per chunk (else vectors are computed).
        seen_ids: ids of earlier batches of the same write; a repeated id is an error.
        known_new: the ids cannot be in the index (it was empty when this write began):
            skip the lookups.
    """
    rows.check_unique_ids(chunks.chunk_id, seen_ids)
    rows.check_text_fields(chunks)
    etags = rows.etags(chunks.title, chunks.text, vectors)
    if known_new:
        changed, added = list(range(len(chunks))), len(chunks)
    else:
        existing = chunk_table.etags_of(connection, chunks.chunk_id)
        ids = chunks.chunk_id
        changed = [i for i, chunk_id in enumerate(ids) if existing.get(chunk_id) != etags[i]]
        added = sum(1 for i in changed if ids[i] not in existing)
    batch = PlannedBatch(chunks, etags, changed, added, known_new=known_new)
    if vectors is not None:
        batch.given = vectors if len(changed) == len(chunks) else vectors[changed]
    elif changed:
        batch.reused = chunk_table.embeddings_by_etag(connection, [etags[i] for i in changed])
        batch.to_embed = [j for j, i in enumerate(changed) if etags[i] not in batch.reused]
    return batch


def apply_batch(
    connection: duckdb.DuckDBPyConnection,
    batch: PlannedBatch,
    embeddings: np.ndarray | None,
    stamp: datetime,
    languages: Languages,
    run: postings.Run | None = None,
) -> WriteStats:
    """Replace the changed chunks (rows and postings, each chunk's word forms in its library's
    language of ``languages``; ``run``: see ``postings.Run``) and restamp the unchanged ones."""
    if batch.changed and embeddings is not None:
        chunk_table.ensure_embedding(connection, embeddings.shape[1])
        _replace_changed(connection, batch, embeddings, stamp, languages, run)
    changed = set(batch.changed)
    same = [i for i in range(len(batch.chunks)) if i not in changed]
    if same:
        chunk_table.restamp_unchanged(connection, batch.chunks.take(same), stamp)
    return batch.stats()


def _replace_changed(
    connection: duckdb.DuckDBPyConnection,
    batch: PlannedBatch,
    embeddings: np.ndarray,
    stamp: datetime,
    languages: Languages,
    run: postings.Run | None,
) -> None:
    chunks = batch.chunks.take(batch.changed)
    if not batch.known_new:
        # Looked up now, not when the batch was planned: the chunk iterator runs in between
        # and may itself write to the store.
        chunk_table.delete_keys(connection, chunk_table.keys_of(connection, chunks.chunk_id))
    first_key = chunk_table.next_key(connection)
    keys = np.arange(first_key, first_key + len(chunks), dtype=np.int64)
    etags = [batch.etags[i] for i in batch.changed]
    chunk_languages = languages.of_chunks(chunks.columns["metadata"])
    new_rows = chunk_table.encode(chunks, keys, etags, embeddings, chunk_languages)
    chunk_table.insert(connection, new_rows, stamp, run)


# What the caller does with a batch and its vectors (the store applies it in its transaction).
_Apply = Callable[[PlannedBatch, np.ndarray | None], WriteStats]


def write_embedding_ahead(
    connection: duckdb.DuckDBPyConnection,
    chunks: Iterable[Chunk],
    embedder: Callable[[], Embedder],
    apply: _Apply,
) -> WriteStats:
    """Write ``chunks`` in batches, each embedded in a background thread while the caller
    produces the next and the previous one is applied (chunking and storing cost as much as a
    fast model's embedding). The caller holds the transaction; ``embedder`` is asked for only
    when a batch has something to embed, so an unchanged write loads no model.
    """
    total = WriteStats()
    seen_ids: set[str] = set()
    embedding = ThreadPoolExecutor(1, thread_name_prefix="duckdb-vectors-embed")
    pending: list[tuple[PlannedBatch, Future[np.ndarray] | None]] = []
    try:
        with ExitStack() as while_overlapping:
            for number, chunk_batch in enumerate(_batched(chunks, WRITE_BATCH)):
                if number == 1:  # from here on DuckDB writes while a batch is embedded
                    while_overlapping.enter_context(threads_reserved(connection, 1))
                batch = plan_batch(connection, rows.ChunkColumns.of(chunk_batch), None, seen_ids)
                texts = batch.texts_to_embed()
                future = embedding.submit(embedder().embed, texts) if texts else None
                pending.append((batch, future))
                if len(pending) == 2:
                    total += _applied(*pending.pop(0), apply)
            for planned in pending:
                total += _applied(*planned, apply)
    finally:
        # On an error or Ctrl-C, a batch being embedded is discarded, not waited for.
        embedding.shutdown(wait=False, cancel_futures=True)
    return total


def _applied(batch: PlannedBatch, future: Future[np.ndarray] | None, apply: _Apply) -> WriteStats:
    """``apply`` of a batch once its vectors are computed (no future: nothing to compute)."""
    return apply(batch, batch.embeddings(future.result() if future else None))


def _batched(items: Iterable[Chunk], size: int) -> Iterator[list[Chunk]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
