"""``VectorStore``: one DuckDB file is one index; the SDK surface, S3 Vectors flavoured.

The one way into an index: it opens (and migrates) the file, owns its connection and lock, and
runs every write in a transaction. ``inputs`` checks arguments, ``writes`` plans and applies
batches, ``chunk_table`` holds the rows, ``search`` ranks, ``compatibility`` matches index and
model, ``manifest`` records what the index holds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from . import compatibility, inputs, remote, resources, writes
from .config import (
    STATIC_LEXICAL_WEIGHT,
    TRANSFORMER_LEXICAL_WEIGHT,
    FusionSettings,
    Quantization,
    Settings,
    is_url,
)
from .embedders import Embedder, get_embedder
from .errors import NotAnIndexError, ReadOnlyError
from .index import chunk_table, documents, plain_sql, postings, slices, vector_codes
from .index.db import (
    Transaction,
    connect,
    evict_cached_blocks,
    first_line,
    is_open,
    memory_limited,
    objects_typed_by_first_value,
)
from .index.languages import Languages
from .index.manifest import (
    LibraryRecord,
    Manifest,
    SourceRecord,
    read_manifest,
    refreshed,
    write_manifest,
)
from .index.retokenize import Retokenized, current_manifest, retokenize_library
from .index.schema import check_readable, migrate
from .index.terms import ParsedQuery
from .inputs import MAX_RESULTS
from .models import Chunk, IndexReport, PublishedSource, SearchResults, VectorPage
from .rows import ChunkColumns
from .search.answer import Match, Query, Scope, Searcher, SqlSearcher, answer
from .search.memory_index import MemoryIndex, estimated_bytes
from .search.user_sql import execute_user_sql, validate_fragment
from .staging import Staging
from .writes import WriteStats

__all__ = ["MAX_RESULTS", "VectorStore", "WriteStats"]


# DuckDB's memory limit during a write: it keeps the rows it wrote cached up to its limit (80%
# of RAM by default), which a large import does not need; above it DuckDB evicts, sorts spill.
WRITE_MEMORY_LIMIT = 512 << 20
logger = logging.getLogger(__name__)


class VectorStore:
    """One DuckDB file holding chunks of text, their vectors and a BM25 index.

    Args:
        db_path: the index file (``DUCKDB_VECTORS_DB_PATH``; default ``vectors.duckdb``), or
            the ``http(s)://`` URL of a published index, opened from a validated local copy
            (see ``remote``; ``#sha256=<hex>`` on the URL pins its content).
        backend: embedder spec such as ``fastembed:minishlab/potion-multilingual-128M``
            (``DUCKDB_VECTORS_BACKEND``). Unset: the backend the index was built with.
        model_path: load the model from this local directory (``DUCKDB_VECTORS_MODEL_PATH``).
        cache_dir: where downloaded models are kept (``DUCKDB_VECTORS_CACHE_DIR``).
        read_only: open a frozen index; every write raises ``ReadOnlyError``. A URL ``db_path``
            is always read-only.
        memory_index: answer from an in-memory snapshot (long-lived processes) instead of
            querying DuckDB each time (one-shot processes).
        memory_budget: the most memory that snapshot may take (bytes, or ``"512MB"``;
            ``DUCKDB_VECTORS_MEMORY_BUDGET``; default: what the container or machine has
            available). One that needs more is not loaded: DuckDB answers, with one warning.
        quantize: ``"int8"`` also stores int8 codes of the vectors, which the snapshot ranks
            (a quarter of the memory) before rescoring the best with float32
            (``DUCKDB_VECTORS_QUANTIZE``). The index records it; given for an index that is
            not quantized, the index is converted here (read-write only).
        language: the Snowball language of the word forms BM25 indexes words as ("english",
            "german", ...; ``DUCKDB_VECTORS_LANGUAGE``). Unset: what the index records
            (english for a new one); another one re-tokenizes the index (read-write only).
        fusion: how vector and BM25 rankings are fused.
        max_age: re-check a published index's cached copy with its server when older than
            this many seconds (or ``"6h"``, ``"2d"``; ``DUCKDB_VECTORS_MAX_AGE``; default 2d).
        embedder: a ready embedder object, instead of one built from ``backend``.
        staged: write a copy made beside the file, put in its place on close (``with`` ending
            in an exception drops it): readers are never locked out and see the old index or
            the new one, whole (see ``staging``). Read-write only.
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
        memory_budget: int | str | None = None,
        quantize: Quantization | None = None,
        language: str | None = None,
        fusion: FusionSettings | None = None,
        max_age: float | str | None = None,
        embedder: Embedder | None = None,
        staged: bool = False,
    ) -> None:
        given = {
            "db_path": db_path,
            "backend": backend,
            "model_path": model_path,
            "cache_dir": cache_dir,
            "read_only": read_only,
            "memory_index": memory_index,
            "memory_budget": memory_budget,
            "quantize": quantize,
            "language": language,
            "fusion": fusion,
            "max_age": max_age,
        }
        self._open(Settings.resolve(**given), embedder, staged)

    @classmethod
    def from_settings(cls, settings: Settings, embedder: Embedder | None = None) -> VectorStore:
        """A store on settings resolved already (by an entry point with settings of its own)."""
        store = cls.__new__(cls)
        store._open(settings, embedder)
        return store

    def _open(self, settings: Settings, embedder: Embedder | None, staged: bool = False) -> None:
        self.settings = settings
        self.source_url, self.db_path = self._local_file(settings)
        self.read_only = self.settings.read_only or self.source_url is not None
        self._lock = threading.RLock()
        if staged and (self.read_only or str(self.db_path) == ":memory:"):
            raise ValueError("staged=True rewrites an index file: open it read-write")
        self._staging = Staging(self.db_path) if staged else None
        # The index, or the copy being written beside it.
        self._file = self._staging.path if self._staging else Path(self.db_path)
        # A file this store creates and never commits to is removed on close: no empty index.
        self._creates_file = (
            not self.read_only and str(self.db_path) != ":memory:" and not self._file.exists()
        )
        try:
            self._connection = connect(self._file, self.read_only, shown_as=Path(self.db_path))
        except BaseException:
            self._remove_if_never_committed()
            raise
        try:
            self.manifest: Manifest | None = self._open_index()
            requested = embedder.spec if embedder is not None else self.settings.backend
            self.backend = compatibility.resolve_backend(self.db_path, self.manifest, requested)
            self.quantization = compatibility.resolve_quantization(
                self.db_path, self.manifest, self.settings.quantize, self.read_only
            )
        except BaseException:
            self._connection.close()
            self._remove_if_never_committed()
            if self._staging is not None:
                self._staging.discard()
            raise
        self._embedder = embedder
        self._embedder_checked = False
        # The fusion settings, with what they were made of (see ``fusion``).
        self._fusion: tuple[tuple[FusionSettings, Manifest | None, bool], FusionSettings] | None = (
            None
        )
        self._memory: MemoryIndex | None = None
        self._fits_in_memory: bool | None = None  # see _memory_index_fits
        self._transaction_depth = 0
        self._stamped_keys: set[str] = set()  # slice keys written since the last refresh
        self._read_sources: dict[str, SourceRecord] = {}  # by prefix, since the last refresh
        self._libraries: list[LibraryRecord] | None = None  # a bundle's, since the last refresh
        # The languages, with what they were made of (see ``languages``).
        self._languages: tuple[tuple[Any, ...], Languages] | None = None
        if self.manifest is not None and self.manifest.quantization != self.quantization:
            self._convert()

    @staticmethod
    def _local_file(settings: Settings) -> tuple[str | None, Path]:
        """The published index's URL (None for a local file) and the file to open."""
        if not is_url(settings.db_path):
            return None, Path(settings.db_path)
        url = str(settings.db_path)
        if "read_only" in settings.model_fields_set and not settings.read_only:
            raise ReadOnlyError(f"{url} is a published index: it opens read-only, not read-write")
        return url, remote.local_path(url, settings.cache_dir, settings.max_age)

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> VectorStore:
        return self

    def __exit__(self, error_type: type[BaseException] | None, *_: object) -> None:
        if error_type is not None and self._staging is not None:
            with self._lock:  # the copy is dropped: the index stays as it was
                self._memory = None
                self._connection.close()
                self._staging.discard()
            return
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
            try:
                if not self.read_only and is_open(self._connection):
                    self._connection.execute("CHECKPOINT")
            except BaseException:  # a staged copy that cannot be finished is not published
                self._connection.close()
                if self._staging is not None:
                    self._staging.discard()
                raise
            self._connection.close()
            self._remove_if_never_committed()
            if self._staging is not None:
                self._staging.publish()

    def _remove_if_never_committed(self) -> None:
        if self._creates_file and getattr(self, "manifest", None) is None:
            for leftover in (self._file, Path(f"{self._file}.wal")):
                leftover.unlink(missing_ok=True)
        if getattr(self, "manifest", None) is None and self._staging is not None:
            self._staging.discard()

    def warm_up(self) -> None:
        """Load the model and the in-memory index now, so the first query does not wait.

        The model loads in a thread meanwhile (the index load runs mostly in DuckDB and numpy,
        which release the GIL); a model that cannot load raises here.
        """
        self.embedder  # noqa: B018 - built here: the thread must not wait for the lock held below
        with ThreadPoolExecutor(1, thread_name_prefix="model-load") as model_load:
            loaded = model_load.submit(lambda: self._checked_embedder().warm_up())
            with self._lock:
                self._searcher()
            loaded.result()

    @property
    def loaded_embedder(self) -> Embedder | None:
        """The embedder, if built already (a server hands it to the index replacing this one)."""
        return self._embedder

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
        chunks = inputs.text_chunks(list(texts), ids, metadatas, titles, sources, positions)
        self.add_chunks(chunks)
        return [chunk.chunk_id for chunk in chunks]

    def add_chunks(self, chunks: Iterable[Chunk], stamp: datetime | None = None) -> WriteStats:
        """Upsert chunks, embedding only those whose title or text changed (by etag).

        Args:
            chunks: the chunks to write; ``etag``, ``stamped_at`` and ``embedding`` are set here.
            stamp: the write time recorded as ``stamped_at`` (default: now).
        """
        stamp = stamp or datetime.now(UTC)
        with self.transaction():
            return writes.write_embedding_ahead(
                self._connection,
                chunks,
                self._checked_embedder,
                lambda batch, embeddings: self._apply(batch, embeddings, stamp),
            )

    def put_vectors(self, vectors: Sequence[dict[str, Any]]) -> WriteStats:
        """Upsert precomputed vectors, as S3 Vectors' ``PutVectors`` does.

        Each item is ``{"key": str, "data": {"float32": [...]}, "metadata": {...}}``; it may
        also carry ``text``, ``title``, ``source`` and ``position`` to make it searchable by BM25
        and returned with its text.
        """
        chunks, matrix = inputs.vector_items(vectors)
        self._require_writable()
        if not chunks:
            return WriteStats()
        return self.put_vector_batches([(chunks, matrix)], datetime.now(UTC))

    def put_vector_batches(
        self, batches: Iterable[tuple[list[Chunk] | ChunkColumns, np.ndarray]], stamp: datetime
    ) -> WriteStats:
        """Upsert chunks with precomputed vectors (one row per chunk), a batch at a time, in one
        transaction; a stream of batches is never held whole. Chunks may come as
        ``ChunkColumns`` (no ``Chunk`` per row)."""
        total = WriteStats()
        seen_ids: set[str] = set()
        with self.transaction():
            # Into an empty index every id is new (a repeated one is an error: ``seen_ids``),
            # and the postings go in as one run in term order (see ``postings.Run``).
            known_new = chunk_table.count(self._connection) == 0
            run = postings.Run(self._connection) if known_new else None
            for chunks, matrix in batches:
                columns = chunks if isinstance(chunks, ChunkColumns) else ChunkColumns.of(chunks)
                batch = writes.plan_batch(self._connection, columns, matrix, seen_ids, known_new)
                total += self._apply(batch, batch.embeddings(None), stamp, run)
            if run is not None:
                run.flush()
        return total

    def delete_vectors(self, keys: Sequence[str]) -> int:
        """Delete chunks by id; return how many existed."""
        with self.transaction():
            return self._delete_keys(
                chunk_table.keys_of(self._connection, inputs.checked_ids(keys))
            )

    def restamp(self, sources: Sequence[str], stamp: datetime) -> None:
        """Mark every chunk of these sources as confirmed at ``stamp`` (see ``prune``)."""
        self._require_writable()
        if not sources:
            return
        with self.transaction():
            chunk_table.restamp_sources(self._connection, sources, stamp)

    def record_slice_keys(self, keys: Iterable[str]) -> None:
        """Record that chunks being written carry these slice keys: the manifest lists them
        and counts each slice's chunks."""
        self._stamped_keys.update(keys)

    @property
    def slice_keys(self) -> list[str]:
        """The metadata keys index runs stamped onto this index's chunks."""
        return self.manifest.slice_keys if self.manifest else []

    @property
    def _written_slice_keys(self) -> list[str]:
        """``slice_keys`` and those of chunks written since the manifest was last refreshed."""
        return sorted(set(self.slice_keys) | self._stamped_keys)

    def record_source(self, record: SourceRecord) -> None:
        """Record where the documents under ``record.prefix`` came from (an index run): the
        manifest lists it in place of the record of that prefix's previous source."""
        self._read_sources[record.prefix] = record

    def record_libraries(self, libraries: Sequence[LibraryRecord]) -> dict[str, Retokenized]:
        """Record the libraries of the bundle the index holds (``bundle.index_bundle``), in
        place of those recorded before: the chunks written from now on are read in their
        library's language. A library held whose language changes is re-tokenized in its new
        one now (its vectors are kept); returns what was, by library (``LibraryRecord.key``)."""
        with self.transaction():
            before = self.languages
            self._libraries = list(libraries)
            after = self.languages
            changed = [
                record.key
                for record in libraries
                if before.of_library(record.key) != after.of_library(record.key)
            ]
            if changed:
                self._memory = None
            found = {
                key: retokenize_library(
                    self._connection, self._written_slice_keys, key, after.of_library(key)
                )
                for key in changed
            }
        return {
            key: Retokenized(f"{before.of_library(key)} -> {after.of_library(key)}", count)
            for key, count in found.items()
            if count
        }

    @property
    def languages(self) -> Languages:
        """The language each library's words are read in: its own, else the index's
        (``index.languages``)."""
        # Every query reads it: made again only when what it is made of was replaced.
        basis = (self.language, self.manifest, self._libraries)
        if self._languages is None or any(
            was is not now for was, now in zip(self._languages[0], basis, strict=True)
        ):
            libraries = self._libraries
            if libraries is None:
                libraries = self.manifest.libraries if self.manifest else []
            own = ((one.key, one.language) for one in libraries)
            self._languages = (basis, Languages.of(self.language, own))
        return self._languages[1]

    def prune(self, source_prefix: str, before: datetime) -> int:
        """Delete chunks whose source starts with ``source_prefix`` and that were last written
        or confirmed before ``before``; return how many."""
        with self.transaction():
            return self._delete_keys(
                chunk_table.stale_keys(self._connection, source_prefix, before)
            )

    def delete_where(
        self, *, filter: dict[str, Any] | None = None, where: str | None = None
    ) -> int:
        """Delete every chunk matching a metadata filter and/or a SQL condition."""
        self._require_writable()
        scope = Scope(filter=filter, where=where)
        if scope.is_everything:
            raise ValueError("delete_where needs a filter or a where condition")
        condition, parameters = scope.condition()
        with self.transaction():
            found = execute_user_sql(
                self._connection, chunk_table.keys_where(condition), parameters
            )
            return self._delete_keys(found.fetchnumpy()["key"])

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The underlying DuckDB connection, for reading what the API does not cover."""
        return self._connection

    # -- reads -------------------------------------------------------------------------------

    def count(self) -> int:
        """The number of chunks in the index."""
        with self._lock:
            return chunk_table.count(self._connection)

    def get_vectors(self, keys: Sequence[str], *, return_data: bool = False) -> list[Chunk]:
        """The chunks with these ids, in the order asked; ids not in the index are left out."""
        with self._lock:
            return chunk_table.by_ids(self._connection, inputs.checked_ids(keys), return_data)

    def list_vectors(
        self, limit: int = 100, next_token: str | None = None, *, return_data: bool = False
    ) -> VectorPage:
        """One page of chunks in id order; pass the page's ``next_token`` to get the next."""
        inputs.check_count("limit", limit)
        after = inputs.after_token(next_token) if next_token else None
        with self._lock:
            chunks, more = chunk_table.page(self._connection, after, limit, return_data)
        token = inputs.page_token(chunks[-1].chunk_id) if more else None
        return VectorPage(vectors=chunks, next_token=token)

    def document(self, source: str, positions: tuple[int, int] | None = None) -> list[Chunk]:
        """The chunks of ``source`` in position order (``positions``: from the first to the
        last given, inclusive); an empty list for a source the index does not hold."""
        with self._lock:
            return chunk_table.by_source(self._connection, source, positions)

    def sources(self) -> dict[str, int]:
        """Each source and how many chunks it has."""
        with self._lock:
            return chunk_table.sources(self._connection)

    def report(self) -> IndexReport:
        """Path, backend, dimension, chunk count, sources and manifest; loads no model."""
        in_memory = str(self.db_path) == ":memory:"
        return IndexReport(
            db_path=str(self.db_path),
            file_size_bytes=None if in_memory else self._file.stat().st_size,
            backend=self.backend,
            dimension=self.manifest.dimension if self.manifest else None,
            chunk_count=self.count(),
            sources=self.sources(),
            manifest=self.manifest.model_dump(mode="json") if self.manifest else None,
            published=self._published_source(),
        )

    def _published_source(self) -> PublishedSource | None:
        copy = self.source_url and remote.cached_copy(self.source_url, self.settings.cache_dir)
        if not copy:
            return None
        return PublishedSource(
            url=copy.url,
            cache_path=copy.path,
            downloaded_at=copy.downloaded_at,
            checked_at=copy.checked_at,
            age_seconds=copy.age_seconds,
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
        one_per_source: bool = False,
        match: Match = "any",
    ) -> SearchResults:
        """Search with a natural-language query: vector and BM25 rankings, fused.

        Args:
            text: the query.
            top_k: how many results to return.
            filter: an S3 Vectors metadata filter, e.g. ``{"year": {"$gte": 2020}}``.
            hybrid: False ranks by vector similarity alone.
            where: a SQL condition over chunk columns that scopes the candidates.
            rescore: a SQL expression that re-weights the fused ``score`` of the candidates.
            vector: the query's embedding, if you have it already (skips embedding ``text``).
            one_per_source: at most one hit per source (document); other documents fill the
                list. (Also an argument of ``query_text`` and ``query_vectors``.)
            match: "all" returns only chunks that contain every query word, in its word form
                (the rankings order them as usual); if no chunk has them all, the search falls
                back to "any" and the results' ``match`` says so. (Also an argument of
                ``query_text``.)

        Returns:
            the hits, best first; a list whose ``match`` attribute tells which match applied.
        """
        parsed = self._parsed_query(text)
        inputs.check_match(match)
        scope, rescore = self._checked_scope(top_k, filter, where, rescore)
        if vector is None:
            query_vector = self._checked_embedder().embed_query([parsed.text])[0]
        else:
            query_vector = inputs.query_vector(vector, self._recorded_dimension())
        return self._search(
            Query(
                query_vector,
                parsed,
                top_k,
                scope,
                rescore,
                one_per_source,
                match,
                lexical=hybrid,
                vector_reads_text=self._model_reads(parsed),
            )
        )

    def query_text(
        self,
        text: str,
        top_k: int = 5,
        *,
        filter: dict[str, Any] | None = None,
        where: str | None = None,
        rescore: str | None = None,
        one_per_source: bool = False,
        match: Match = "any",
    ) -> SearchResults:
        """Rank by BM25 alone (words by their word form, codes as written); no model is
        loaded. Chunks with no query term are not returned (with ``match="all"``, chunks
        without every term)."""
        parsed = self._parsed_query(text)
        inputs.check_match(match)
        scope, rescore = self._checked_scope(top_k, filter, where, rescore)
        return self._search(Query(None, parsed, top_k, scope, rescore, one_per_source, match))

    def query_vectors(
        self,
        vector: Sequence[float] | np.ndarray,
        top_k: int = 5,
        *,
        filter: dict[str, Any] | None = None,
        where: str | None = None,
        rescore: str | None = None,
        one_per_source: bool = False,
    ) -> SearchResults:
        """Rank by cosine similarity to a precomputed vector (S3 Vectors' ``QueryVectors``)."""
        scope, rescore = self._checked_scope(top_k, filter, where, rescore)
        query = inputs.query_vector(vector, self._recorded_dimension())
        return self._search(Query(query, None, top_k, scope, rescore, one_per_source))

    # -- internals ---------------------------------------------------------------------------

    def _parsed_query(self, text: str) -> ParsedQuery:
        settings = self.settings
        return inputs.parsed_query(
            text, self.languages.all, settings.max_query_chars, settings.max_query_terms
        )

    @staticmethod
    def _checked_scope(
        top_k: int, filter: dict[str, Any] | None, where: str | None, rescore: str | None
    ) -> tuple[Scope, str | None]:
        inputs.check_count("top_k", top_k)
        scope = Scope(filter=filter, where=where)
        return scope, (validate_fragment(rescore, "rescore") if rescore is not None else None)

    def _search(self, query: Query) -> SearchResults:
        with self._lock:
            searcher = self._searcher()
            if searcher is None:
                return SearchResults()
            return answer(query, searcher, self._connection, self.fusion, str(self.db_path))

    def _convert(self) -> None:
        """Quantize an existing index (a write's manifest refresh codes every chunk)."""
        try:
            with self.transaction():
                pass
        except BaseException:
            self._connection.close()
            raise

    def _searcher(self) -> Searcher | None:
        """What answers queries now, or None for an empty index."""
        if self._memory is not None:  # the hot path: no SQL at all
            return self._memory if len(self._memory) else None
        if self.count() == 0:
            return None
        quantization = self.manifest.quantization if self.manifest else None
        if not self.settings.memory_index or not self._memory_index_fits(quantization):
            return SqlSearcher(
                self._connection, self._dimension(), self._written_slice_keys, self.languages
            )
        try:
            self._memory = MemoryIndex.load(
                self._connection, self._written_slice_keys, self.languages, quantization
            )
            if not self._transaction_depth:  # inside one, a refusal would abort it
                evict_cached_blocks(self._connection)
        except duckdb.Error as error:  # a file damaged where no query had read yet
            raise NotAnIndexError(
                f"{self.db_path}: its in-memory index could not be loaded: {first_line(error)}"
            ) from None
        except NotAnIndexError as error:
            raise NotAnIndexError(f"{self.db_path} is not a usable index: {error}") from None
        return self._memory

    def _memory_index_fits(self, quantization: Quantization | None) -> bool:
        """Whether the in-memory index fits the memory budget (decided once per store: a
        process that answers from SQL keeps doing so); if not, say why, once."""
        if self._fits_in_memory is None:
            needed = estimated_bytes(self._connection, quantization)
            budget = self.settings.memory_budget or resources.available_memory()
            self._fits_in_memory = budget is None or needed <= budget
            if not self._fits_in_memory:
                logger.warning(
                    "%s: the in-memory index needs about %d MB and %d MB are available"
                    " (memory_budget, or the container's limit); answering from SQL instead,"
                    " about 0.5 s a query per million chunks: give it more memory, or quantize"
                    " it (upgrade --quantize int8: a quarter of the vectors' memory)",
                    self.db_path,
                    needed >> 20,
                    (budget or 0) >> 20,
                )
        return self._fits_in_memory

    def _apply(
        self,
        batch: writes.PlannedBatch,
        embeddings: np.ndarray | None,
        stamp: datetime,
        run: postings.Run | None = None,
    ) -> WriteStats:
        if embeddings is not None:
            compatibility.check_written_dimension(self.db_path, self.manifest, embeddings.shape[1])
        self._memory = None
        return writes.apply_batch(self._connection, batch, embeddings, stamp, self.languages, run)

    def _delete_keys(self, keys: np.ndarray) -> int:
        self._memory = None
        chunk_table.delete_keys(self._connection, keys)
        if len(keys):
            documents.forget_orphans(self._connection)
        return len(keys)

    def _refresh_manifest(self) -> None:
        self._memory = None
        dimension = chunk_table.embedding_dimension(self._connection)
        if dimension is None:
            return  # nothing has ever been written: no dimension to record yet
        if self.quantization is not None:
            vector_codes.sync(self._connection, dimension, chunk_table.embeddings)
        count, content_hash = chunk_table.content_statistics(self._connection)
        fingerprint = self._embedder.fingerprint() if self._embedder_checked else None
        slice_keys = self._written_slice_keys
        counts = slices.count(self._connection, slice_keys)
        # A key no chunk carries any more (its slices were pruned or deleted) is forgotten.
        slice_keys = [key for key in slice_keys if any(key in c.metadata for c in counts)]
        # What the view and macros were made for (a new index's: by its migrations).
        made_for = _plain_sql_inputs(self.manifest)
        self.manifest = refreshed(
            self.manifest,
            backend=self.backend,
            model_fingerprint=fingerprint,
            dimension=dimension,
            chunk_count=count,
            content_hash=content_hash,
            slice_keys=slice_keys,
            slices=counts,
            quantization=self.quantization,
            language=self.language,
            lexical_weight=self._recorded_lexical_weight(),
        )
        self.manifest = self._with_origins(self.manifest)
        if _plain_sql_inputs(self.manifest) != made_for:  # the view's slice column, the languages
            plain_sql.create(self._connection, *_plain_sql_inputs(self.manifest))
        write_manifest(self._connection, self.manifest)

    def _with_origins(self, manifest: Manifest) -> Manifest:
        """``manifest`` with the sources and libraries recorded since the last refresh, and
        without the records of prefixes that hold no chunk any more."""
        recorded = {record.prefix: record for record in manifest.sources}
        recorded.update(self._read_sources)
        libraries = manifest.libraries if self._libraries is None else self._libraries
        if not recorded and not libraries:
            return manifest
        stored = list(chunk_table.sources(self._connection))

        def holds(prefix: str) -> bool:
            return any(source.startswith(prefix) for source in stored)

        sources = [recorded[prefix] for prefix in sorted(recorded) if holds(prefix)]
        libraries = [library for library in libraries if holds(library.prefix)]
        return manifest.model_copy(update={"sources": sources, "libraries": libraries})

    def _recorded_lexical_weight(self) -> float | None:
        """What the manifest records as BM25's share: what it recorded, else the default of
        the model's kind once a model is in use (None until then)."""
        if self.manifest is not None and self.manifest.lexical_weight is not None:
            return self.manifest.lexical_weight
        if not self._embedder_checked or self._embedder is None:
            return None
        static = getattr(self._embedder, "is_static", lambda: False)()
        return STATIC_LEXICAL_WEIGHT if static else TRANSFORMER_LEXICAL_WEIGHT

    @property
    def fusion(self) -> FusionSettings:
        """How rankings are fused: the settings, with BM25's share from the index unless it
        was set (argument or ``DUCKDB_VECTORS_FUSION_LEXICAL_WEIGHT``)."""
        # Every query reads it: made again only when what it is made of was replaced, by
        # identity (settings equal as values may differ in which fields were set).
        basis = (self.settings.fusion, self.manifest, self._embedder_checked)
        if self._fusion is None or any(
            was is not now for was, now in zip(self._fusion[0], basis, strict=True)
        ):
            self._fusion = (basis, self._resolved_fusion())
        return self._fusion[1]

    def _resolved_fusion(self) -> FusionSettings:
        fusion = self.settings.fusion
        recorded = self._recorded_lexical_weight()
        if recorded is None or "lexical_weight" in fusion.model_fields_set:
            return fusion
        return fusion.model_copy(update={"lexical_weight": recorded})

    def record_lexical_weight(self, weight: float) -> None:
        """Record BM25's share of the fused score in the index (``eval --tune``)."""
        if self.manifest is None:
            raise NotAnIndexError(f"{self.db_path} holds no index yet")
        with self.transaction():  # its manifest refresh writes the weight
            self.manifest = self.manifest.model_copy(update={"lexical_weight": weight})

    def _open_index(self) -> Manifest | None:
        """Check (or migrate) the schema and read the manifest, re-tokenizing an index from an
        older tokenizer; damage is one clear error."""
        try:
            if self.read_only:
                check_readable(self._connection)
            else:
                migrate(self._connection)
            manifest = read_manifest(self._connection)
            stored = chunk_table.embedding_dimension(self._connection)
        except NotAnIndexError as error:
            raise NotAnIndexError(f"{self.db_path} is not a usable index: {error}") from None
        except duckdb.Error as error:
            raise NotAnIndexError(f"{self.db_path} cannot be read: {first_line(error)}") from None
        compatibility.check_stored_dimension(self.db_path, manifest, stored)
        self.language = compatibility.resolve_language(
            self.db_path, manifest, self.settings.language
        )
        current = current_manifest(
            self._connection, manifest, self.db_path, self.read_only, self.language
        )
        # The index as it was before this open re-tokenized it (an index run reports it).
        self.retokenized_from = manifest if current is not manifest else None
        return current

    def _model_reads(self, query: ParsedQuery) -> bool:
        """Whether the model can read the query: not when it knows only English and most of
        the question's letters are of another script."""
        if query.mostly_latin:
            return True
        return not getattr(self.embedder, "english_only", lambda: False)()

    def _checked_embedder(self) -> Embedder:
        embedder = self.embedder
        if not self._embedder_checked and self.manifest is not None:
            compatibility.check_embedder(self.db_path, self.manifest, embedder, self.backend)
        self._embedder_checked = True
        return embedder

    def _recorded_dimension(self) -> int | None:
        return self.manifest.dimension if self.manifest else None

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
                with memory_limited(self._connection, WRITE_MEMORY_LIMIT):
                    with (
                        objects_typed_by_first_value(self._connection),
                        Transaction(self._connection),
                    ):
                        yield
                        self._refresh_manifest()
                    # A reordering, not a change: after the commit it adds nothing to the
                    # write's memory.
                    with Transaction(self._connection):
                        postings.compact_if_unordered(self._connection)
            except BaseException:
                self._memory = None
                self.manifest = read_manifest(self._connection)
                raise
            finally:
                self._transaction_depth = 0
                self._stamped_keys = set()
                self._read_sources = {}
                self._libraries = None


def _plain_sql_inputs(manifest: Manifest | None) -> tuple[list[str], Languages]:
    """What ``plain_sql.create`` makes the view and macros of an index with ``manifest`` for."""
    if manifest is None:
        return [], Languages()
    return manifest.slice_keys, manifest.languages()
