"""The in-memory hot path: one snapshot of an index's vectors, postings and chunk rows.

A DuckDB query costs planning before it reads a row, and its full-table vector scan is slower
than numpy's matrix-vector product, so a long-lived process loads the index once and answers
from numpy: a matrix product for the vector ranking, an inverted index for BM25, and the rows
it returns, a list per column. DuckDB stays the store of record; the snapshot is rebuilt after
this process writes to the index.

A quantized index is ranked from its int8 codes (a quarter of the memory); the best candidates
are rescored with their float32 vectors, read from DuckDB by key.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import duckdb
import numpy as np

from ..bm25 import BM25_B, BM25_K1, bm25_idf, bm25_weight
from ..config import Quantization
from ..errors import NotAnIndexError
from ..index import chunk_table, postings, slices, vector_codes
from ..index.db import numpy_batches, scalar, scan_buffer_pool
from ..index.languages import Languages
from ..models import Chunk
from .answer import Scope
from .quantization import Int8Vectors
from .ranking import TIE_TOLERANCE, Ranking

# Up to this many chunks the rows returned with results are held; above, they are read from
# DuckDB per query, a small share of a query at that size, where holding them would cost
# seconds of load and hundreds of MB (docs/performance.md).
RESIDENT_ROWS_LIMIT = 250_000
# Held rows are read this many chunks at a time: a read's result is held twice while it is
# converted (by DuckDB, and as Python objects).
ROWS_PER_READ = 16_384
# The columns whose values repeat from chunk to chunk (a document's source and title, one
# write's time): held rows share one object per distinct value.
_REPEATING = frozenset({"source", "title", "metadata", "stamped_at"})
_SOURCE = chunk_table.CHUNK_FIELDS.index("source")
_CHUNK_ID = chunk_table.CHUNK_FIELDS.index("chunk_id")
# DuckDB hands a scan to Python in Arrow batches of this many rows: one is held while it is copied.
_ARROW_BATCH_ROWS = 131_072
# What a held chunk row takes besides its text's characters, and a term in the snapshot's dict.
_HELD_ROW_BYTES = 340
_TERM_BYTES = 130
# The rows of the metadata filters searched last are held, up to this many times the chunks in
# all (8 bytes a row): a snapshot's rows of a filter never change, and an agent that searches
# one library after another (a filter on every chunk's metadata: 0.2-0.3 s at 100k chunks on
# a busy 2-core machine) pays for each library's once.
FILTER_ROWS_HELD = 4


@dataclass
class _Postings:
    """BM25 inverted index: the term with id ``t`` has rows ``rows[offsets[t]:offsets[t+1]]``
    (arrays indexed by term id). ``library`` numbers each row's library (0 to one less than
    ``len(documents)``; see ``bm25.py``)."""

    term_ids: dict[str, int]  # the terms that have postings
    offsets: np.ndarray
    rows: np.ndarray
    weights: np.ndarray  # the BM25 term-frequency part (each library's average length), no idf
    library: np.ndarray  # by row
    documents: np.ndarray  # by library: its chunks

    def idf(self, starts: list[int], ends: list[int], searched: np.ndarray | None) -> np.ndarray:
        """The idf of each term (with postings ``starts[i]:ends[i]``) over the libraries
        ``searched`` (a mask by library; None: all)."""
        if searched is None:
            frequencies = np.subtract(ends, starts)
            documents = float(len(self.library))
        else:
            frequencies = np.array(
                [
                    np.count_nonzero(searched[self.library[self.rows[start:end]]])
                    for start, end in zip(starts, ends, strict=True)
                ]
            )
            documents = float(self.documents[searched].sum())
        return bm25_idf(frequencies.astype(np.float64), documents)


class _FilterRows:
    """The rows (ascending) each of the metadata filters searched last allows, read once
    (``FILTER_ROWS_HELD``); safe to share between threads."""

    def __init__(self, connection: duckdb.DuckDBPyConnection, keys: np.ndarray) -> None:
        self.connection, self.keys = connection, keys
        self.held: OrderedDict[str, np.ndarray] = OrderedDict()
        self.held_rows = 0
        self.lock = threading.Lock()

    def allowed(self, filter: dict[str, Any]) -> np.ndarray:
        name = json.dumps(filter, sort_keys=True)
        with self.lock:
            rows = self.held.get(name)
            if rows is not None:
                self.held.move_to_end(name)
                return rows
        rows = _rows_where(self.connection, self.keys, Scope(filter=filter))
        with self.lock:
            if name not in self.held:
                self.held[name] = rows
                self.held_rows += len(rows)
            while self.held_rows > FILTER_ROWS_HELD * len(self.keys):
                self.held_rows -= len(self.held.popitem(last=False)[1])
        return rows


def _rows_where(
    connection: duckdb.DuckDBPyConnection, keys: np.ndarray, scope: Scope
) -> np.ndarray:
    """The rows (ascending) of the chunks ``scope``'s SQL allows."""
    condition, parameters = scope.condition()
    allowed = connection.execute(chunk_table.keys_where(condition), parameters).fetchnumpy()
    return np.searchsorted(keys, np.asarray(allowed["key"], dtype=np.int64))


class Vectors(Protocol):
    """The snapshot's vectors, which rank rows by cosine similarity to a query."""

    @property
    def nbytes(self) -> int: ...

    def top(
        self, query: np.ndarray, depth: int, rows: np.ndarray | None
    ) -> tuple[np.ndarray | None, np.ndarray]:
        """Rows (None: all rows, in order) and their cosine similarities to ``query`` (a unit
        vector): at least the ``depth`` best of ``rows`` (None: of all rows), ties included."""
        ...


@dataclass
class Float32Vectors:
    """The embeddings as one L2-normalised float32 matrix: exact, every score computed."""

    matrix: np.ndarray

    @classmethod
    def load(cls, connection: duckdb.DuckDBPyConnection, keys: np.ndarray) -> Float32Vectors:
        return cls(_normalised_matrix(connection, keys))

    @property
    def nbytes(self) -> int:
        return self.matrix.nbytes

    def top(
        self, query: np.ndarray, depth: int, rows: np.ndarray | None
    ) -> tuple[np.ndarray | None, np.ndarray]:
        similarities = self.matrix @ query
        return (rows, similarities[rows]) if rows is not None else (None, similarities)


@dataclass
class QuantizedVectors:
    """int8 codes rank every row approximately; the best ``RESCORE_FACTOR * depth`` are
    rescored with the float32 vectors read from DuckDB (see ``quantization.rescore``)."""

    int8: Int8Vectors
    connection: duckdb.DuckDBPyConnection
    keys: np.ndarray

    @classmethod
    def load(cls, connection: duckdb.DuckDBPyConnection, keys: np.ndarray) -> QuantizedVectors:
        dimension = vector_codes.width(connection) or 0
        codes = np.empty((len(keys), dimension), dtype=np.int8)
        with scan_buffer_pool(connection):
            if not _fill_in_key_order(connection, vector_codes.TABLE, "codes", keys, codes):
                raise NotAnIndexError(
                    f"its int8 codes ({vector_codes.TABLE}) do not match its chunks;"
                    " open it read-write once to code them again"
                )
        return cls(Int8Vectors(codes), connection, keys)

    @property
    def nbytes(self) -> int:
        return self.int8.nbytes

    def top(
        self, query: np.ndarray, depth: int, rows: np.ndarray | None
    ) -> tuple[np.ndarray | None, np.ndarray]:
        return self.int8.top(query, depth, self._exact, rows)

    def _exact(self, rows: np.ndarray) -> np.ndarray:
        return chunk_table.embeddings(self.connection, self.keys[rows], self.int8.dimension)


@dataclass(frozen=True, eq=False, repr=False)
class MemoryIndex:
    """An immutable in-memory snapshot that ranks exactly like ``SqlSearcher`` (a quantized
    index: with int8 codes, whose rescored top ranks match it at recall@10 >= 0.99).

    Attributes:
        connection: the store's connection, used to resolve scopes (filters, ``where``).
        keys: chunk keys, ascending; row ``i`` of every array belongs to ``keys[i]``.
        vectors: the embeddings, one row per chunk.
        postings: the BM25 inverted index.
        rows: the ``chunk_table.CHUNK_FIELDS`` columns of the chunks, each a list in key
            order (``_held_rows``); None to read them from ``connection`` per query.
        filter_rows: the rows of the metadata filters searched last.
        index_languages: the language of each library's words.
        library_names: each library's name, by its number in ``postings`` (only read, so only
            held, when the libraries have several languages).
    """

    connection: duckdb.DuckDBPyConnection
    keys: np.ndarray
    vectors: Vectors
    postings: _Postings
    rows: list[list[Any]] | None
    filter_rows: _FilterRows
    index_languages: Languages
    library_names: list[str]

    @classmethod
    def load(
        cls,
        connection: duckdb.DuckDBPyConnection,
        slice_keys: Sequence[str],
        languages: Languages,
        quantization: Quantization | None = None,
    ) -> MemoryIndex:
        """The snapshot of what ``connection`` sees (an index with ``slice_keys``, whose
        libraries' words are read in ``languages``)."""
        library_sql = slices.library_sql(slice_keys)
        core = chunk_table.lengths(connection, library_sql)
        keys = np.asarray(core["key"], dtype=np.int64)
        lengths = np.asarray(core["token_count"], dtype=np.float64)
        library = np.asarray(core["library"], dtype=np.int32)
        # The postings (sorts and joins in older layouts) load before the vectors' scan holds
        # the database's buffer pool small.
        layout = postings.Layout.of(connection)
        inverted = _load_postings(connection, layout, keys, lengths, library)
        _release_cached_blocks(connection)
        vectors = (QuantizedVectors if quantization == "int8" else Float32Vectors).load(
            connection, keys
        )
        _release_cached_blocks(connection)
        rows = None
        if len(keys) <= RESIDENT_ROWS_LIMIT:
            rows = _held_rows(connection, keys)
            _release_cached_blocks(connection)
        names = chunk_table.libraries(connection, library_sql) if languages.several else []
        return cls(
            connection,
            keys,
            vectors,
            inverted,
            rows,
            _FilterRows(connection, keys),
            languages,
            names,
        )

    def __len__(self) -> int:
        return len(self.keys)

    def vector_ranking(self, query: np.ndarray, depth: int, scope: Scope) -> Ranking:
        if len(self.keys) == 0:
            return Ranking.empty()
        rows, similarities = self.vectors.top(_unit(query), depth, self._candidate_rows(scope))
        return self._top(rows, similarities, depth)

    def lexical_ranking(self, terms: list[str], depth: int, scope: Scope) -> Ranking:
        postings = self.postings
        found = [postings.term_ids.get(term) for term in dict.fromkeys(terms)]
        ids = np.asarray([term_id for term_id in found if term_id is not None], dtype=np.int64)
        if len(ids) == 0:
            return Ranking.empty()
        starts, ends = postings.offsets[ids].tolist(), postings.offsets[ids + 1].tolist()
        spans = [slice(start, end) for start, end in zip(starts, ends, strict=True)]
        candidates = self._candidate_rows(scope)
        idf = postings.idf(starts, ends, self._libraries_searched(scope, candidates))
        rows = np.concatenate([postings.rows[span] for span in spans])
        weights = np.concatenate([postings.weights[span] for span in spans]) * np.repeat(
            idf, np.subtract(ends, starts)
        )
        scores = np.bincount(rows, weights=weights, minlength=len(self.keys))
        matched = np.flatnonzero(scores)
        if candidates is not None:
            matched = np.intersect1d(matched, candidates, assume_unique=True)
        return self._top(matched, scores[matched], depth)

    def languages(self, scope: Scope) -> list[str]:
        if not self.index_languages.several:
            return [self.index_languages.default]
        unnarrowed = replace(scope, keys=None)
        searched = self._libraries_searched(unnarrowed, self._candidate_rows(unnarrowed))
        names = self.library_names
        if searched is not None:
            names = [name for name, kept in zip(names, searched, strict=True) if kept]
        return self.index_languages.of_libraries(names)

    def keys_with_every(self, groups: list[list[str]], scope: Scope) -> np.ndarray:
        postings = self.postings
        rows: np.ndarray | None = self._candidate_rows(scope)
        for group in groups:
            ids = [postings.term_ids[term] for term in group if term in postings.term_ids]
            if not ids:
                return np.zeros(0, dtype=np.int64)
            spans = [postings.rows[postings.offsets[i] : postings.offsets[i + 1]] for i in ids]
            span = np.unique(np.concatenate(spans))
            rows = span if rows is None else np.intersect1d(rows, span, assume_unique=True)
        return self.keys[rows] if rows is not None else self.keys

    def chunks(self, keys: np.ndarray) -> list[Chunk]:
        if self.rows is None:
            return chunk_table.by_keys(self.connection, keys)
        columns = self.rows
        return [
            chunk_table.decode([column[row] for column in columns])
            for row in self.keys.searchsorted(keys).tolist()
        ]

    def documents(self, keys: np.ndarray) -> list[str]:
        if self.rows is None:
            return chunk_table.documents_of(self.connection, keys)
        sources, chunk_ids = self.rows[_SOURCE], self.rows[_CHUNK_ID]
        return [
            chunk_table.document_of(sources[row], chunk_ids[row])
            for row in self.keys.searchsorted(keys).tolist()
        ]

    def _candidate_rows(self, scope: Scope) -> np.ndarray | None:
        """The rows ``scope`` allows, ascending; None for all of them. A filter alone is
        answered from ``filter_rows``; a ``where`` (which may call ``now()`` or ``random()``)
        is run each time; keys (from match="all") need no SQL."""
        if scope.filter is not None and scope.where is None:
            rows: np.ndarray | None = self.filter_rows.allowed(scope.filter)
        elif scope.where is not None:
            rows = _rows_where(self.connection, self.keys, replace(scope, keys=None))
        else:
            rows = None
        if scope.keys is None:
            return rows
        wanted = np.searchsorted(self.keys, np.sort(np.asarray(scope.keys, dtype=np.int64)))
        return wanted if rows is None else np.intersect1d(rows, wanted, assume_unique=True)

    def _libraries_searched(self, scope: Scope, candidates: np.ndarray | None) -> np.ndarray | None:
        """The libraries ``scope`` holds chunks of (``candidates``: its rows), as a mask by
        library; None for all of them. The keys a search narrows it to (``match="all"``) do
        not count: BM25's statistics are those of the libraries searched."""
        libraries = len(self.postings.documents)
        if libraries <= 1 or not scope.has_user_sql:
            return None
        if scope.keys is not None:
            candidates = self._candidate_rows(replace(scope, keys=None))
        held = np.bincount(self.postings.library[candidates], minlength=libraries) > 0
        return None if held.all() else held

    def _top(self, rows: np.ndarray | None, scores: np.ndarray, depth: int) -> Ranking:
        """The ``depth`` best of ``scores`` (for ``rows``, or all rows if None), ties by key."""
        chosen = best_with_ties(scores, depth) if len(scores) > depth else np.arange(len(scores))
        selected_rows = chosen if rows is None else rows[chosen]
        return Ranking.ordered(self.keys[selected_rows], scores[chosen], depth)


def estimated_bytes(
    connection: duckdb.DuckDBPyConnection, quantization: Quantization | None
) -> int:
    """About what loading the snapshot adds to a process at its peak: the vectors (or int8
    codes), 8 bytes a posting, the terms, the rows held (up to ``RESIDENT_ROWS_LIMIT`` chunks),
    the filters' rows held and one Arrow batch of vectors in flight; on the high side."""
    chunks = chunk_table.count(connection)
    dimension = chunk_table.embedding_dimension(connection) or 0
    vector_width = dimension * (1 if quantization == "int8" else 4)
    layout = postings.Layout.of(connection)
    posting_count = int(scalar(connection, f"SELECT count(*) FROM {layout.postings}") or 0)
    term_count = int(scalar(connection, f"SELECT count(*) FROM {layout.terms}") or 0)
    held_rows = 0
    if chunks <= RESIDENT_ROWS_LIMIT:
        held_rows = chunk_table.text_bytes(connection) + chunks * _HELD_ROW_BYTES
    in_flight = min(chunks, _ARROW_BATCH_ROWS) * vector_width
    return (
        chunks * (vector_width + 16 + 8 * FILTER_ROWS_HELD)
        + posting_count * 8
        + term_count * _TERM_BYTES
        + held_rows
        + in_flight
    )


def best_with_ties(scores: np.ndarray, k: int) -> np.ndarray:
    """The positions (ascending) of the ``k`` largest of ``scores`` and of every score tied
    with the ``k``-th (within ``TIE_TOLERANCE``): a partition picks an arbitrary member of a
    tie at the cut. (1 <= k <= len(scores); no NaN, which the snapshot's unit vectors and
    BM25 weights never produce.)"""
    cut = float(np.partition(scores, len(scores) - k)[len(scores) - k])
    return (scores >= cut - TIE_TOLERANCE * max(abs(cut), 1.0)).nonzero()[0]


def _normalised_matrix(connection: duckdb.DuckDBPyConnection, keys: np.ndarray) -> np.ndarray:
    """The embeddings as one float32 matrix, rows L2-normalised, in ``keys`` order."""
    if len(keys) == 0:
        return np.zeros((0, 0), dtype=np.float32)
    dimension = chunk_table.embedding_dimension(connection) or 0
    matrix = np.empty((len(keys), dimension), dtype=np.float32)
    with scan_buffer_pool(connection):
        _fill_in_key_order(connection, "chunks", "embedding", keys, matrix)
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))[:, None]
    matrix /= np.where(norms == 0, 1.0, norms)
    return matrix


def _fill_in_key_order(
    connection: duckdb.DuckDBPyConnection,
    table: str,
    vector_column: str,
    keys: np.ndarray,
    matrix: np.ndarray,
) -> bool:
    """Copy ``table``'s ``vector_column`` into ``matrix`` (rows in ``keys`` order); False if
    the table's keys are not ``keys``. Storage order is key order (keys only grow, and a
    changed chunk is a new row), so DuckDB streams the column unsorted; if some writer left it
    otherwise, it is read again sorted."""
    for order in ("", " ORDER BY key"):
        if _fill_matrix(
            connection, f"SELECT key, {vector_column} FROM {table}{order}", keys, matrix
        ):
            return True
    return False


def _fill_matrix(
    connection: duckdb.DuckDBPyConnection, query: str, keys: np.ndarray, matrix: np.ndarray
) -> bool:
    """Copy ``query``'s vectors (its second column) into ``matrix``; False if its keys are not
    ``keys``."""
    start = 0
    for batch in numpy_batches(connection.sql(query)):
        batch_keys, vectors = batch.values()
        end = start + len(batch_keys)
        if not np.array_equal(batch_keys, keys[start:end]):
            return False
        matrix[start:end] = vectors
        start = end
    return start == len(keys)


def _release_cached_blocks(connection: duckdb.DuckDBPyConnection) -> None:
    """Let DuckDB hand back the blocks it cached while the snapshot was read (it now holds
    them itself), rather than keep them until memory pressure."""
    with scan_buffer_pool(connection):
        pass


def _load_postings(
    connection: duckdb.DuckDBPyConnection,
    layout: postings.Layout,
    keys: np.ndarray,
    lengths: np.ndarray,
    library: np.ndarray,
) -> _Postings:
    """The inverted index (8 bytes a posting), read in storage order, which is mostly term
    order (``postings.compact_if_unordered``): a batch out of order is sorted by term first,
    so nothing the size of the table is sorted or held twice. ``library`` numbers each row's
    library (0, 1 ...)."""
    document_frequency = postings.document_frequencies(connection, layout)
    offsets = np.concatenate([[0], np.cumsum(document_frequency, dtype=np.int64)])
    next_free = offsets[:-1].copy()
    rows = np.empty(offsets[-1], dtype=np.int32)
    weights = np.empty(offsets[-1], dtype=np.float32)
    row_of = _row_finder(keys)
    lengths32 = lengths.astype(np.float32)
    documents = np.bincount(library).astype(np.float64)
    # Each library's mean as numpy takes it of one array (as DuckDB's avg: exact for counts).
    averages = np.array(
        [lengths[library == number].mean() for number in range(len(documents))] or [1.0],
        dtype=np.float32,
    )
    for batch in postings.in_storage_order(connection, layout):
        term_ids, batch_keys, tf = batch["term_id"], batch["key"], batch["tf"]
        if np.any(term_ids[1:] < term_ids[:-1]):
            order = np.argsort(term_ids, kind="stable")
            term_ids, batch_keys, tf = term_ids[order], batch_keys[order], tf[order]
        batch_rows = row_of(batch_keys)
        place = _claim_positions(term_ids, next_free)
        rows[place] = batch_rows
        weights[place] = bm25_weight(
            tf, lengths32[batch_rows], averages[library[batch_rows]], BM25_K1, BM25_B
        )
    term_ids = postings.term_ids_with_postings(connection, layout, document_frequency)
    return _Postings(term_ids, offsets, rows, weights, library, documents)


def _claim_positions(term_ids: np.ndarray, next_free: np.ndarray) -> slice | np.ndarray:
    """Where postings of ``term_ids`` (sorted) go: after those of the same term placed before;
    a slice when the places are consecutive (every batch of a table stored in term order)."""
    if len(term_ids) == 0:
        return slice(0, 0)
    starts = np.flatnonzero(np.concatenate([[True], term_ids[1:] != term_ids[:-1]]))
    run_lengths = np.diff(np.append(starts, len(term_ids)))
    run_terms = term_ids[starts]
    run_places = next_free[run_terms]
    next_free[run_terms] += run_lengths
    if np.array_equal(run_places[1:], run_places[:-1] + run_lengths[:-1]):
        return slice(int(run_places[0]), int(run_places[0]) + len(term_ids))
    return np.repeat(run_places - starts, run_lengths) + np.arange(len(term_ids))


def _row_finder(keys: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Maps keys (each in ``keys``, ascending) to their rows, through a table from the first
    key to the last: postings come grouped by term, so their keys jump about, and a binary
    search for each is far slower."""
    first = int(keys[0]) if len(keys) else 0
    table = np.zeros(int(keys[-1]) - first + 1 if len(keys) else 0, dtype=np.int32)
    table[keys - first] = np.arange(len(keys), dtype=np.int32)
    return lambda wanted: table[wanted - first]


def _held_rows(connection: duckdb.DuckDBPyConnection, keys: np.ndarray) -> list[list[Any]]:
    """The ``chunk_table.CHUNK_FIELDS`` columns of the chunks with ``keys`` (every chunk,
    ascending), each a list, read ``ROWS_PER_READ`` keys at a time."""
    columns: list[list[Any]] = [[] for _ in chunk_table.CHUNK_FIELDS]
    shared: dict[Any, Any] = {}
    for start in range(0, len(keys), ROWS_PER_READ):
        low, high = int(keys[start]), int(keys[min(start + ROWS_PER_READ, len(keys)) - 1])
        batch = chunk_table.columns_between(connection, low, high)
        for column, name in zip(columns, chunk_table.CHUNK_FIELDS, strict=True):
            values = batch[name].tolist()
            column += [shared.setdefault(v, v) for v in values] if name in _REPEATING else values
    return columns


def _unit(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float32).ravel()
    # np.linalg.norm's own sum, without its checks (the division rounds to float32 as it does).
    norm = math.sqrt(vector.dot(vector))
    return vector / norm if norm else vector
