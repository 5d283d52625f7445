"""``VectorStore``: one DuckDB file is one index. The SDK surface, S3 Vectors flavoured."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from . import documents, rows, writes
from .config import DEFAULT_BACKEND, FusionSettings, Settings
from .db import (
    Transaction,
    connect,
    first_line,
    is_open,
    objects_typed_by_first_value,
    registered,
    scalar,
    threads_reserved,
)
from .embedders import Embedder, canonical_backend, get_embedder
from .errors import (
    IndexMismatchError,
    InvalidRankingSQLError,
    NotAnIndexError,
    ReadOnlyError,
)
from .manifest import Manifest, content_statistics, read_manifest, write_manifest
from .memory_index import MemoryIndex
from .models import Chunk, IndexReport, SearchResult, VectorPage
from .ranking_sql import validate_fragment
from .retokenize import current_manifest
from .schema import (
    SCHEMA_VERSION,
    check_readable,
    embedding_dimension,
    has_table,
    migrate,
)
from .search import (
    CHUNK_COLUMNS,
    FusedRanking,
    Scope,
    Searcher,
    SqlSearcher,
    chunk_from_row,
    fuse,
)
from .tokenizer import TOKENIZER_NAME, tokenize
from .writes import WriteStats

# The most results one call returns (a guard against a runaway top_k, not a tuning knob).
MAX_RESULTS = 10_000
# Chunks embedded and written together. Each batch costs a dozen statements and a pipeline step;
# indexing the DuckDB docs was 3.5% faster with 1,024 than with 512, and no faster with 2,048.
WRITE_BATCH = 1024


class VectorStore:
    """One DuckDB file holding chunks of text, their vectors and a BM25 index.

    Args:
        db_path: the index file (``DUCKDB_VECTORS_DB_PATH``; default ``vectors.duckdb``).
        backend: embedder spec such as ``fastembed:minishlab/potion-multilingual-128M``
            (``DUCKDB_VECTORS_BACKEND``). Unset: the backend the index was built with.
        model_path: load the model from this local directory (``DUCKDB_VECTORS_MODEL_PATH``).
        cache_dir: where downloaded models are kept (``DUCKDB_VECTORS_CACHE_DIR``).
        read_only: open a frozen index; every write raises ``ReadOnlyError``.
        memory_index: answer from an in-memory snapshot (long-lived processes) instead of
            querying DuckDB each time (one-shot processes).
        fusion: how vector and BM25 rankings are fused.
        embedder: a ready embedder object, instead of one built from ``backend``.
    """

    def __init__(
        self,
        db_path: str | Path | None = None,
        backend: str | None = None,
        *,
        model_path: str | Path | None = None,
        cache_dir: str | Path | None = None,
        read_only: bool | None = None,
        memory_index: bool | None = None,
        fusion: FusionSettings | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        given = {
            "db_path": db_path,
            "backend": backend,
            "model_path": model_path,
            "cache_dir": cache_dir,
            "read_only": read_only,
            "memory_index": memory_index,
            "fusion": fusion,
        }
        self.settings = Settings.resolve(**given)
        self.db_path = self.settings.db_path
        self.read_only = self.settings.read_only
        self._lock = threading.RLock()
        # A file this store creates is removed again on close if nothing was ever committed
        # to it (say, the first index run failed to load its model): no empty index is left.
        self._creates_file = (
            not self.read_only
            and str(self.db_path) != ":memory:"
            and not Path(self.db_path).exists()
        )
        self._connection = connect(self.db_path, self.read_only)
        try:
            self.manifest: Manifest | None = self._open_index()
            self.backend = self._resolve_backend(embedder)
        except BaseException:
            self._connection.close()
            self._remove_if_never_committed()
            raise
        self._embedder = embedder
        self._embedder_checked = False
        self._memory: MemoryIndex | None = None
        self._transaction_depth = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> VectorStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else "read-write"
        return f"VectorStore({str(self.db_path)!r}, backend={self.backend!r}, {mode})"

    def close(self) -> None:
        """Release the file (a read-write store checkpoints it, leaving no ``.wal``).

        A file this store created and never committed an index to is removed.
        """
        with self._lock:
            self._memory = None
            if not self.read_only and is_open(self._connection):
                self._connection.execute("CHECKPOINT")
            self._connection.close()
            self._remove_if_never_committed()

    def _remove_if_never_committed(self) -> None:
        if self._creates_file and getattr(self, "manifest", None) is None:
            for leftover in (Path(self.db_path), Path(f"{self.db_path}.wal")):
                leftover.unlink(missing_ok=True)

    def warm_up(self) -> None:
        """Load the model and the in-memory index now, so the first query does not wait."""
        self._checked_embedder().warm_up()
        with self._lock:
            self._searcher()

    @property
    def embedder(self) -> Embedder:
        """The embedder queries and texts are embedded with (its model loads on first use)."""
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    self._embedder = get_embedder(
                        self.backend, self.settings.model_path, self.settings.cache_dir
                    )
        return self._embedder

    # -- writes ------------------------------------------------------------------------------

    def add_texts(
        self,
        texts: Sequence[str],
        ids: Sequence[str] | None = None,
        metadatas: Sequence[dict[str, Any] | None] | None = None,
        *,
        titles: Sequence[str | None] | None = None,
        sources: Sequence[str | None] | None = None,
        positions: Sequence[int | None] | None = None,
    ) -> list[str]:
        """Embed and upsert texts; return their ids.

        Args:
            texts: the chunk texts.
            ids: stable keys; writing an existing id replaces that chunk. Default: a hash of
                the text, so adding the same text twice stores it once.
            metadatas: one JSON-serialisable dict per text.
            titles: heading breadcrumbs, embedded as context in front of the text.
            sources: document identifiers (e.g. relative paths).
            positions: ordinal of each chunk within its source.
        """
        texts = list(texts)
        columns = {
            "ids": ids,
            "metadatas": metadatas,
            "titles": titles,
            "sources": sources,
            "positions": positions,
        }
        for name, values in columns.items():
            if values is not None and len(values) != len(texts):
                raise ValueError(f"{name} has {len(values)} items but texts has {len(texts)}")
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{index}] must be a string, got {type(text).__name__}")
        chunk_ids = list(ids) if ids is not None else [rows.text_id(text) for text in texts]
        chunks = [
            Chunk(
                chunk_id=chunk_ids[i],
                text=texts[i],
                metadata=(metadatas[i] if metadatas else None) or {},
                title=titles[i] if titles else None,
                source=sources[i] if sources else None,
                position=positions[i] if positions else None,
            )
            for i in range(len(texts))
        ]
        self.add_chunks(chunks)
        return chunk_ids

    def add_chunks(self, chunks: Iterable[Chunk], stamp: datetime | None = None) -> WriteStats:
        """Upsert chunks, embedding only those whose title or text changed (by etag).

        Args:
            chunks: the chunks to write; ``etag``, ``stamped_at`` and ``embedding`` are set here.
            stamp: the write time recorded as ``stamped_at`` (default: now).
        """
        return self._write_embedding_ahead(chunks, stamp or datetime.now(UTC))

    def put_vectors(self, vectors: Sequence[dict[str, Any]]) -> WriteStats:
        """Upsert precomputed vectors, as S3 Vectors' ``PutVectors`` does.

        Each item is ``{"key": str, "data": {"float32": [...]}, "metadata": {...}}``; it may
        also carry ``text``, ``title``, ``source`` and ``position`` to make it searchable by BM25
        and returned with its text.
        """
        if isinstance(vectors, np.ndarray):
            raise ValueError(
                'put_vectors takes a list of {"key": ..., "data": {"float32": [...]}} '
                "items, not a matrix: pair each row with its key"
            )
        chunks, matrix = [], []
        for index, item in enumerate(vectors):
            try:
                data = item["data"]["float32"] if isinstance(item["data"], dict) else item["data"]
                chunks.append(
                    Chunk(
                        chunk_id=item["key"],
                        text=item.get("text") or "",
                        metadata=item.get("metadata") or {},
                        title=item.get("title"),
                        source=item.get("source"),
                        position=item.get("position"),
                    )
                )
            except (KeyError, TypeError, IndexError) as error:
                raise ValueError(
                    f"vectors[{index}] must look like "
                    '{"key": "id", "data": {"float32": [...]}, "metadata": {...}}'
                ) from error
            matrix.append(data)
        lengths = {len(row) for row in matrix}
        if len(lengths) > 1:
            raise ValueError(
                f"all vectors must have the same length, got lengths {sorted(lengths)}"
            )
        array = np.asarray(matrix, dtype=np.float32).reshape(len(matrix), -1)
        if not np.isfinite(array).all():
            raise ValueError("vectors must not contain NaN or infinity")
        return self._write(chunks, vectors=array)

    def delete_vectors(self, keys: Sequence[str]) -> int:
        """Delete chunks by id; return how many existed."""
        self._require_writable()
        with self._lock, self.transaction():
            if not has_table(self._connection, "chunks"):
                return 0
            old = self._connection.execute(
                "SELECT key FROM chunks WHERE chunk_id IN (SELECT unnest($1::VARCHAR[]))",
                [_checked_ids(keys)],
            ).fetchnumpy()["key"]
            self._delete_keys(old)
        return len(old)

    def restamp(self, sources: Sequence[str], stamp: datetime) -> None:
        """Mark every chunk of these sources as confirmed at ``stamp`` (see ``prune``)."""
        self._require_writable()
        if not sources or not has_table(self._connection, "chunks"):
            return
        with self._lock, self.transaction():
            self._connection.execute(
                "UPDATE chunks SET stamped_at = $1 WHERE source IN (SELECT unnest($2::VARCHAR[]))",
                [stamp, list(sources)],
            )

    def prune(self, source_prefix: str, before: datetime) -> int:
        """Delete chunks whose source starts with ``source_prefix`` and that were last written
        or confirmed before ``before``; return how many."""
        self._require_writable()
        if not has_table(self._connection, "chunks"):
            return 0
        with self._lock, self.transaction():
            stale = self._connection.execute(
                "SELECT key FROM chunks WHERE source IS NOT NULL"
                " AND starts_with(source, $1) AND stamped_at < $2",
                [source_prefix, before],
            ).fetchnumpy()["key"]
            self._delete_keys(stale)
        return len(stale)

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The underlying DuckDB connection, for reading what the API does not cover."""
        return self._connection

    def delete_where(
        self, *, filter: dict[str, Any] | None = None, where: str | None = None
    ) -> int:
        """Delete every chunk matching a metadata filter and/or a SQL condition."""
        self._require_writable()
        scope = Scope(filter=filter, where=where)
        if scope.is_everything:
            raise ValueError("delete_where needs a filter or a where condition")
        with self._lock, self.transaction():
            if not has_table(self._connection, "chunks"):
                return 0
            condition, parameters = scope.condition()
            old = self._execute_user_sql(
                f"SELECT key FROM chunks WHERE {condition}", parameters
            ).fetchnumpy()["key"]
            self._delete_keys(old)
        return len(old)

    # -- reads -------------------------------------------------------------------------------

    def count(self) -> int:
        """The number of chunks in the index."""
        with self._lock:
            if not has_table(self._connection, "chunks"):
                return 0
            return int(scalar(self._connection, "SELECT count(*) FROM chunks"))

    def get_vectors(self, keys: Sequence[str], *, return_data: bool = False) -> list[Chunk]:
        """The chunks with these ids, in the order asked; ids not in the index are left out."""
        with self._lock:
            if not has_table(self._connection, "chunks"):
                return []
            rows = self._connection.execute(
                f"SELECT {CHUNK_COLUMNS}, {'embedding' if return_data else 'NULL'} FROM chunks"
                " WHERE chunk_id IN (SELECT unnest($1::VARCHAR[]))",
                [_checked_ids(keys)],
            ).fetchall()
        by_id = {row[0]: chunk_from_row(row[:-1], row[-1]) for row in rows}
        return [by_id[key] for key in dict.fromkeys(keys) if key in by_id]

    def list_vectors(
        self, limit: int = 100, next_token: str | None = None, *, return_data: bool = False
    ) -> VectorPage:
        """One page of chunks in id order; pass the page's ``next_token`` to get the next."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RESULTS:
            raise ValueError(f"limit must be an integer from 1 to {MAX_RESULTS}, got {limit!r}")
        after = _decode_token(next_token) if next_token else None
        with self._lock:
            if not has_table(self._connection, "chunks"):
                return VectorPage(vectors=[])
            rows = self._connection.execute(
                f"SELECT {CHUNK_COLUMNS}, {'embedding' if return_data else 'NULL'} FROM chunks"
                " WHERE $1::VARCHAR IS NULL OR chunk_id > $1 ORDER BY chunk_id LIMIT $2",
                [after, limit + 1],
            ).fetchall()
        chunks = [chunk_from_row(row[:-1], row[-1]) for row in rows[:limit]]
        token = _encode_token(chunks[-1].chunk_id) if len(rows) > limit else None
        return VectorPage(vectors=chunks, next_token=token)

    def sources(self) -> dict[str, int]:
        """Each source and how many chunks it has."""
        with self._lock:
            if not has_table(self._connection, "chunks"):
                return {}
            rows = self._connection.execute(
                "SELECT coalesce(source, ''), count(*) FROM chunks GROUP BY 1 ORDER BY 1"
            ).fetchall()
        return {source: count for source, count in rows}

    def report(self) -> IndexReport:
        """Path, backend, dimension, chunk count, sources and manifest; loads no model."""
        in_memory = str(self.db_path) == ":memory:"
        return IndexReport(
            db_path=str(self.db_path),
            file_size_bytes=None if in_memory else Path(self.db_path).stat().st_size,
            backend=self.backend,
            dimension=self.manifest.dimension if self.manifest else None,
            chunk_count=self.count(),
            sources=self.sources(),
            manifest=self.manifest.model_dump(mode="json") if self.manifest else None,
        )

    def query(
        self,
        text: str,
        top_k: int = 5,
        *,
        filter: dict[str, Any] | None = None,
        hybrid: bool = True,
        where: str | None = None,
        rescore: str | None = None,
        vector: Sequence[float] | np.ndarray | None = None,
    ) -> list[SearchResult]:
        """Search with a natural-language query: vector and BM25 rankings, fused.

        Args:
            text: the query.
            top_k: how many results to return.
            filter: an S3 Vectors metadata filter, e.g. ``{"year": {"$gte": 2020}}``.
            hybrid: False ranks by vector similarity alone.
            where: a SQL condition over chunk columns that scopes the candidates.
            rescore: a SQL expression that re-weights the fused ``score`` of the candidates.
            vector: the query's embedding, if you have it already (skips embedding ``text``).
        """
        _check_query(text)
        _check_top_k(top_k)
        scope = Scope(filter=filter, where=where)
        rescore = validate_fragment(rescore, "rescore") if rescore is not None else None
        if vector is None:
            query_vector = self._checked_embedder().embed_query([text])[0]
        else:
            query_vector = self._checked_query_vector(vector)
        terms = tokenize(text) if hybrid else None
        return self._search(query_vector, terms, top_k, scope, rescore)

    def query_text(
        self,
        text: str,
        top_k: int = 5,
        *,
        filter: dict[str, Any] | None = None,
        where: str | None = None,
        rescore: str | None = None,
    ) -> list[SearchResult]:
        """Rank by exact-token BM25 alone; no model is loaded. Chunks with no query term
        are not returned."""
        _check_query(text)
        _check_top_k(top_k)
        scope = Scope(filter=filter, where=where)
        rescore = validate_fragment(rescore, "rescore") if rescore is not None else None
        return self._search(None, tokenize(text), top_k, scope, rescore)

    def query_vectors(
        self,
        vector: Sequence[float] | np.ndarray,
        top_k: int = 5,
        *,
        filter: dict[str, Any] | None = None,
        where: str | None = None,
        rescore: str | None = None,
    ) -> list[SearchResult]:
        """Rank by cosine similarity to a precomputed vector (S3 Vectors' ``QueryVectors``)."""
        _check_top_k(top_k)
        scope = Scope(filter=filter, where=where)
        rescore = validate_fragment(rescore, "rescore") if rescore is not None else None
        query = self._checked_query_vector(vector)
        return self._search(query, None, top_k, scope, rescore)

    def _checked_query_vector(self, vector: Sequence[float] | np.ndarray) -> np.ndarray:
        query = np.asarray(vector, dtype=np.float32).ravel()
        dimension = self.manifest.dimension if self.manifest else None
        if dimension is not None and len(query) != dimension:
            raise ValueError(f"the query vector has {len(query)} dimensions, the index {dimension}")
        if not np.isfinite(query).all():
            raise ValueError("the query vector must not contain NaN or infinity")
        return query

    # -- internals: search -------------------------------------------------------------------

    def _search(
        self,
        vector: np.ndarray | None,
        terms: list[str] | None,
        top_k: int,
        scope: Scope,
        rescore: str | None,
    ) -> list[SearchResult]:
        """Rank by the vector, the terms, or both (fused) when both are given."""
        fusion = self.settings.fusion
        fused_or_rescored = (vector is not None and terms is not None) or rescore is not None
        depth = max(fusion.candidates, top_k) if fused_or_rescored else top_k
        with self._lock:
            searcher = self._searcher()
            if searcher is None:
                return []
            try:
                by_vector = (
                    None if vector is None else searcher.vector_ranking(vector, depth, scope)
                )
                by_text = None if terms is None else searcher.lexical_ranking(terms, depth, scope)
            except duckdb.Error as error:
                if scope.is_everything:  # no user SQL involved: the file itself is damaged
                    raise NotAnIndexError(
                        f"{self.db_path} cannot be read: {first_line(error)}"
                    ) from None
                raise InvalidRankingSQLError(f"where/filter: {first_line(error)}") from None
            if by_vector is not None and by_text is not None:
                fused = fuse(by_vector, by_text, fusion)
            elif by_vector is not None:
                fused = FusedRanking.from_vector(by_vector)
            else:
                fused = FusedRanking.from_text(by_text)
            if rescore is not None:
                fused = self._rescore(fused, rescore)
            top = fused.head(top_k)
            chunks = searcher.chunks(top.keys)
        return [
            SearchResult(
                chunk=chunk,
                score=float(score),
                vector_rank=int(vector_rank) or None,
                text_rank=int(text_rank) or None,
            )
            for chunk, score, vector_rank, text_rank in zip(
                chunks, top.scores, top.vector_ranks, top.text_ranks, strict=True
            )
        ]

    def _searcher(self) -> Searcher | None:
        """What answers queries now, or None for an empty index."""
        if self._memory is not None:  # the hot path: no SQL at all
            return self._memory if len(self._memory) else None
        if self.count() == 0:
            return None
        if not self.settings.memory_index:
            return SqlSearcher(self._connection, self._dimension())
        self._memory = MemoryIndex.load(self._connection)
        return self._memory

    def _rescore(self, fused: FusedRanking, expression: str) -> FusedRanking:
        candidates = {
            "key": fused.keys,
            "score": fused.scores,
            "vector_rank": np.ma.masked_equal(fused.vector_ranks, 0),
            "text_rank": np.ma.masked_equal(fused.text_ranks, 0),
        }
        with registered(self._connection, "fused_candidates", candidates):
            result = self._execute_user_sql(
                f"SELECT key, CAST(({expression}) AS DOUBLE) AS score,"
                " coalesce(vector_rank, 0), coalesce(text_rank, 0)"
                " FROM fused_candidates JOIN chunks USING (key)"
                " ORDER BY score DESC NULLS LAST, key",
                [],
            ).fetchnumpy()
        columns = list(result.values())
        return FusedRanking(
            np.asarray(columns[0], dtype=np.int64),
            np.nan_to_num(np.asarray(columns[1], dtype=np.float64), nan=-np.inf),
            np.asarray(columns[2], dtype=np.int64),
            np.asarray(columns[3], dtype=np.int64),
        )

    def _execute_user_sql(self, sql: str, parameters: list[Any]) -> duckdb.DuckDBPyConnection:
        try:
            return self._connection.execute(sql, parameters)
        except duckdb.Error as error:
            raise InvalidRankingSQLError(f"ranking SQL failed: {first_line(error)}") from error

    # -- internals: writes -------------------------------------------------------------------

    def _write(self, chunks: list[Chunk], vectors: np.ndarray | None) -> WriteStats:
        """One batch with the caller's vectors (``put_vectors``)."""
        self._require_writable()
        if not chunks:
            return WriteStats()
        stamp = datetime.now(UTC)
        with self._lock, self.transaction():
            batch = writes.plan_batch(self._connection, chunks, vectors)
            return self._apply(batch, batch.embeddings(None), stamp)

    def _write_embedding_ahead(self, chunks: Iterable[Chunk], stamp: datetime) -> WriteStats:
        """Write ``chunks`` in batches; each batch is embedded in a background thread while
        the caller produces the next batch and the previous one is written.

        Overlap is the point: for a fast local model, chunking, tokenizing and storing cost as
        much as embedding, and a cloud embedder waits on the network. The thread only embeds
        (no DuckDB calls); the store's lock and one transaction cover the whole write.
        """
        total = WriteStats()
        seen_ids: set[str] = set()
        embedding = ThreadPoolExecutor(1, thread_name_prefix="duckdb-vectors-embed")
        pending: tuple[writes.PlannedBatch, Future[np.ndarray] | None] | None = None
        try:
            with self._lock, self.transaction(), ExitStack() as while_overlapping:
                for number, chunk_batch in enumerate(_batched(chunks, WRITE_BATCH)):
                    if number == 1:  # from here on DuckDB writes while a batch is embedded
                        while_overlapping.enter_context(threads_reserved(self._connection, 1))
                    batch = writes.plan_batch(self._connection, chunk_batch, None, seen_ids)
                    texts = batch.texts_to_embed()
                    future = (
                        embedding.submit(self._checked_embedder().embed, texts) if texts else None
                    )
                    if pending is not None:
                        total += self._apply_embedded(*pending, stamp)
                    pending = (batch, future)
                if pending is not None:
                    total += self._apply_embedded(*pending, stamp)
        finally:
            # On an error or Ctrl-C, do not wait for a batch being embedded: it is discarded.
            embedding.shutdown(wait=False, cancel_futures=True)
        return total

    def _apply_embedded(
        self, batch: writes.PlannedBatch, future: Future[np.ndarray] | None, stamp: datetime
    ) -> WriteStats:
        return self._apply(batch, batch.embeddings(future.result() if future else None), stamp)

    def _apply(
        self, batch: writes.PlannedBatch, embeddings: np.ndarray | None, stamp: datetime
    ) -> WriteStats:
        if embeddings is not None:
            self._check_dimension(embeddings.shape[1])
        self._memory = None
        return writes.apply_batch(self._connection, batch, embeddings, stamp)

    def _delete_keys(self, keys: np.ndarray) -> None:
        self._memory = None
        writes.delete_keys(self._connection, keys)
        if len(keys):
            documents.forget_orphans(self._connection)

    def _refresh_manifest(self) -> None:
        self._memory = None
        dimension = embedding_dimension(self._connection)
        if dimension is None:
            return  # nothing has ever been written: no dimension to record yet
        count, content_hash = content_statistics(self._connection)
        previous = self.manifest
        fingerprint = self._embedder.fingerprint() if self._embedder_checked else None
        fields: dict[str, Any] = {
            "backend": self.backend,
            "model_fingerprint": fingerprint or (previous.model_fingerprint if previous else None),
            "dimension": dimension,
            "tokenizer": TOKENIZER_NAME,
            "schema_version": SCHEMA_VERSION,
            "chunk_count": count,
            "content_hash": content_hash,
        }
        if previous is not None:
            fields["created_at"] = previous.created_at
        manifest = Manifest(**fields)
        write_manifest(self._connection, manifest)
        self.manifest = manifest

    # -- internals: checks -------------------------------------------------------------------

    def _open_index(self) -> Manifest | None:
        """Check (or migrate) the schema and read the manifest, re-tokenizing an index from an
        older tokenizer; damage is one clear error."""
        try:
            if self.read_only:
                check_readable(self._connection)
            else:
                migrate(self._connection)
            manifest = read_manifest(self._connection)
            stored = embedding_dimension(self._connection)
        except NotAnIndexError as error:
            raise NotAnIndexError(f"{self.db_path} is not a usable index: {error}") from None
        except duckdb.Error as error:
            raise NotAnIndexError(f"{self.db_path} cannot be read: {first_line(error)}") from None
        if manifest is not None and stored is not None and manifest.dimension != stored:
            raise IndexMismatchError(
                f"{self.db_path}: its manifest says {manifest.dimension} dimensions but its vectors"
                f" have {stored}; the file was altered, re-index it"
            )
        return current_manifest(self._connection, manifest, self.db_path, self.read_only)

    def _resolve_backend(self, embedder: Embedder | None) -> str:
        recorded = self.manifest.backend if self.manifest else None
        requested = embedder.spec if embedder is not None else self.settings.backend
        if requested is None:
            return recorded or DEFAULT_BACKEND
        requested = canonical_backend(requested)
        if recorded is not None and requested != canonical_backend(recorded):
            raise IndexMismatchError(
                f"{self.db_path} was built with backend {recorded}, not {requested}; "
                f"use --backend {recorded} (or leave it unset), or re-index with the new backend"
            )
        return requested

    def _checked_embedder(self) -> Embedder:
        embedder = self.embedder
        if self._embedder_checked or self.manifest is None:
            self._embedder_checked = True
            return embedder
        if embedder.dimension != self.manifest.dimension:
            raise IndexMismatchError(
                f"{self.db_path} holds {self.manifest.dimension}-dimensional vectors but "
                f"{self.backend} makes {embedder.dimension}-dimensional ones; re-index"
            )
        recorded, actual = self.manifest.model_fingerprint, embedder.fingerprint()
        if recorded and actual and recorded != actual:
            raise IndexMismatchError(
                f"{self.db_path} was built with other model files for {self.backend} "
                f"(fingerprint {recorded[:12]}, this model {actual[:12]}); "
                "use the model it was built with, or re-index"
            )
        self._embedder_checked = True
        return embedder

    def _check_dimension(self, dimension: int | None) -> None:
        recorded = self.manifest.dimension if self.manifest else None
        if dimension is not None and recorded is not None and dimension != recorded:
            raise IndexMismatchError(
                f"{self.db_path} holds {recorded}-dimensional vectors, not {dimension}"
            )

    def _dimension(self) -> int:
        if self.manifest is None:
            raise NotAnIndexError(f"{self.db_path} has no manifest")
        return self.manifest.dimension

    def _require_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(
                f"{self.db_path} is open read-only; open it with read_only=False to change it"
            )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes into one all-or-nothing transaction; the manifest is refreshed once,
        at the end. Nested uses join the outer transaction. An exception (Ctrl-C included)
        rolls everything back, leaving the index as it was. While it lasts, DuckDB types
        Python object columns scanned on ``connection`` by their first non-null value."""
        self._require_writable()
        with self._lock:
            if self._transaction_depth:
                self._transaction_depth += 1
                try:
                    yield
                finally:
                    self._transaction_depth -= 1
                return
            self._transaction_depth = 1
            try:
                with objects_typed_by_first_value(self._connection), Transaction(self._connection):
                    yield
                    self._refresh_manifest()
            except BaseException:
                self._memory = None
                self.manifest = read_manifest(self._connection)
                raise
            finally:
                self._transaction_depth = 0


def _check_query(text: str) -> None:
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the query text must be a non-empty string")
    rows.check_utf8(text, "the query")


def _checked_ids(keys: Sequence[str]) -> list[str]:
    return [rows.check_utf8(key, "an id") if isinstance(key, str) else str(key) for key in keys]


def _check_top_k(top_k: int) -> None:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_RESULTS:
        raise ValueError(f"top_k must be an integer from 1 to {MAX_RESULTS}, got {top_k!r}")


def _encode_token(chunk_id: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": chunk_id}).encode()).decode()


def _decode_token(token: str) -> str:
    try:
        after = json.loads(base64.urlsafe_b64decode(token.encode()))["after"]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            "next_token is not valid; pass the token a previous page returned"
        ) from error
    if not isinstance(after, str):
        raise ValueError("next_token is not valid; pass the token a previous page returned")
    return after


def _batched(items: Iterable[Chunk], size: int) -> Iterator[list[Chunk]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
