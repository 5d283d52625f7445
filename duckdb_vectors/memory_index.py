"""The in-memory hot path: one snapshot of an index's vectors, postings and chunk rows.

A DuckDB query costs a fraction of a millisecond of planning before it reads a row, and a
full-table ``array_cosine_similarity`` scan is ~10x slower than one matrix-vector product in
numpy. A long-lived process therefore loads the index once (about a second per 100k chunks)
and answers from numpy: a matrix product for the vector ranking, an inverted index for BM25,
and plain column lists for the rows it returns. DuckDB stays the store of record; the snapshot is
rebuilt after this process writes to the index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from . import chunk_table
from .models import Chunk
from .search import (
    BM25_B,
    BM25_K1,
    TIE_TOLERANCE,
    Ranking,
    Scope,
    bm25_idf_sql,
    bm25_weight_sql,
)

_LOAD_BATCH = 16_384
_SAMPLE_STRIDE = 8  # one score in eight bounds the top-k threshold from below


@dataclass
class _Postings:
    """BM25 inverted index: for term ``t``, rows ``rows[offsets[t]:offsets[t+1]]``."""

    vocabulary: dict[str, int]
    offsets: np.ndarray
    rows: np.ndarray
    weights: np.ndarray  # the BM25 term-frequency part, without idf
    idf: np.ndarray


class MemoryIndex:
    """An immutable in-memory snapshot that ranks exactly like ``SqlSearcher``.

    Args:
        connection: the store's connection, used to resolve scopes (filters, ``where``).
        keys: chunk keys, ascending; row ``i`` of every array belongs to ``keys[i]``.
        matrix: L2-normalised embeddings, one row per chunk.
        postings: the BM25 inverted index.
        rows: the chunk columns returned with results, one list per column.
    """

    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        keys: np.ndarray,
        matrix: np.ndarray,
        postings: _Postings,
        rows: dict[str, list[Any]],
    ) -> None:
        self.connection = connection
        self.keys = keys
        self.matrix = matrix
        self.postings = postings
        self.rows = rows

    @classmethod
    def load(
        cls, connection: duckdb.DuckDBPyConnection, k1: float = BM25_K1, b: float = BM25_B
    ) -> MemoryIndex:
        core = connection.sql("SELECT key, token_count FROM chunks ORDER BY key").fetchnumpy()
        keys = np.asarray(core["key"], dtype=np.int64)
        lengths = np.asarray(core["token_count"], dtype=np.float64)
        matrix = _normalised_matrix(connection, keys)
        postings = _load_postings(connection, lengths, k1, b)
        _release_cached_blocks(connection)  # the postings sort's memory, before the texts
        rows = chunk_table.read_all(connection)
        _release_cached_blocks(connection)
        return cls(connection, keys, matrix, postings, rows)

    def __len__(self) -> int:
        return len(self.keys)

    def vector_ranking(self, query: np.ndarray, depth: int, scope: Scope) -> Ranking:
        if len(self.keys) == 0:
            return Ranking.empty()
        similarities = self.matrix @ _unit(query)
        candidates = self._candidate_rows(scope)
        if candidates is not None:
            return self._top(candidates, similarities[candidates], depth)
        return self._top(None, similarities, depth)

    def lexical_ranking(self, terms: list[str], depth: int, scope: Scope) -> Ranking:
        postings = self.postings
        term_ids = [
            postings.vocabulary[t] for t in dict.fromkeys(terms) if t in postings.vocabulary
        ]
        if not term_ids:
            return Ranking.empty()
        ids = np.asarray(term_ids)
        starts, ends = postings.offsets[ids].tolist(), postings.offsets[ids + 1].tolist()
        spans = [slice(start, end) for start, end in zip(starts, ends, strict=True)]
        rows = np.concatenate([postings.rows[span] for span in spans])
        weights = np.concatenate([postings.weights[span] for span in spans]) * np.repeat(
            postings.idf[ids], np.subtract(ends, starts)
        )
        scores = np.bincount(rows, weights=weights, minlength=len(self.keys))
        matched = np.flatnonzero(scores)
        candidates = self._candidate_rows(scope)
        if candidates is not None:
            matched = np.intersect1d(matched, candidates, assume_unique=True)
        return self._top(matched, scores[matched], depth)

    def keys_with_every(self, terms: list[str], scope: Scope) -> np.ndarray:
        postings = self.postings
        rows: np.ndarray | None = self._candidate_rows(scope)
        for term in dict.fromkeys(terms):
            term_id = postings.vocabulary.get(term)
            if term_id is None:
                return np.zeros(0, dtype=np.int64)
            span = postings.rows[postings.offsets[term_id] : postings.offsets[term_id + 1]]
            rows = np.unique(span) if rows is None else np.intersect1d(rows, span)
        return self.keys[rows] if rows is not None else self.keys

    def chunks(self, keys: np.ndarray) -> list[Chunk]:
        return [self._chunk(int(row)) for row in np.searchsorted(self.keys, keys)]

    def _chunk(self, row: int) -> Chunk:
        return chunk_table.decode({name: values[row] for name, values in self.rows.items()})

    def _candidate_rows(self, scope: Scope) -> np.ndarray | None:
        """The rows ``scope`` allows, ascending; None for all of them."""
        if scope.is_everything:
            return None
        if not scope.has_user_sql:  # only keys, from match="all": no SQL needed
            return np.searchsorted(self.keys, np.sort(np.asarray(scope.keys, dtype=np.int64)))
        condition, parameters = scope.condition()
        allowed = self.connection.execute(
            f"SELECT key FROM chunks WHERE {condition} ORDER BY key", parameters
        ).fetchnumpy()["key"]
        return np.searchsorted(self.keys, np.asarray(allowed, dtype=np.int64))

    def _top(self, rows: np.ndarray | None, scores: np.ndarray, depth: int) -> Ranking:
        """The ``depth`` best of ``scores`` (for ``rows``, or all rows if None), ties by key."""
        if len(scores) > depth:
            # A partition picks an arbitrary member of a tie at the cut; widen to keep all ties.
            cut = float(kth_largest(scores, depth))
            chosen = np.flatnonzero(scores >= cut - TIE_TOLERANCE * max(abs(cut), 1.0))
        else:
            chosen = np.arange(len(scores))
        selected_rows = chosen if rows is None else rows[chosen]
        return Ranking.ordered(self.keys[selected_rows], scores[chosen], depth)


def kth_largest(scores: np.ndarray, k: int) -> float:
    """The ``k``-th largest of ``scores`` (1 <= k <= len(scores); no NaN, which the snapshot's
    unit vectors and BM25 weights never produce).

    A full partition costs about as much as the matrix product itself (37 us at 5k rows). The
    ``k``-th largest of a strided sample is a lower bound of the true one (the sample's ``k``
    best are all in ``scores``), so only the scores at or above it, about ``k * _SAMPLE_STRIDE``
    of them, need partitioning.
    """
    if len(scores) >= k * _SAMPLE_STRIDE * 4:
        sample = scores[::_SAMPLE_STRIDE]
        bound = np.partition(sample, len(sample) - k)[len(sample) - k]
        scores = scores[scores >= bound]
    return np.partition(scores, len(scores) - k)[len(scores) - k]


def _normalised_matrix(connection: duckdb.DuckDBPyConnection, keys: np.ndarray) -> np.ndarray:
    """The embeddings as one float32 matrix, rows L2-normalised, in ``keys`` order.

    DuckDB hands an ARRAY column to numpy as one small array per row; fetched all at once
    they fragment the heap by the size of the whole matrix, which stays in the process's RSS.
    Fetching by key range into a preallocated matrix keeps that transient to one batch.
    """
    if len(keys) == 0:
        return np.zeros((0, 0), dtype=np.float32)
    dimension = chunk_table.embedding_dimension(connection) or 0
    matrix = np.empty((len(keys), dimension), dtype=np.float32)
    for start in range(0, len(keys), _LOAD_BATCH):
        batch = keys[start : start + _LOAD_BATCH]
        rows = connection.execute(
            "SELECT embedding FROM chunks WHERE key BETWEEN $1 AND $2 ORDER BY key",
            [int(batch[0]), int(batch[-1])],
        ).fetchnumpy()["embedding"]
        matrix[start : start + len(batch)] = np.stack(rows)
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))[:, None]
    matrix /= np.where(norms == 0, 1.0, norms)
    return matrix


def _release_cached_blocks(connection: duckdb.DuckDBPyConnection) -> None:
    """Let DuckDB hand back the blocks it cached while the snapshot was read.

    The snapshot now holds that data itself; DuckDB would otherwise keep the scanned blocks
    and the sort's memory (about twice the snapshot) until memory pressure. Shrinking the limit
    for a moment evicts them; the user's limit is then put back.
    """
    limit = connection.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    connection.execute("SET memory_limit = '32MB'")
    connection.execute("SET memory_limit = $1", [limit])


def _load_postings(
    connection: duckdb.DuckDBPyConnection, lengths: np.ndarray, k1: float, b: float
) -> _Postings:
    # DuckDB groups and sorts the postings by term (in parallel, ~3x faster than doing it in
    # numpy); both statements order terms the same way, so df[i] counts term i's postings.
    # The sort key is the term's rank, an integer, not the string; DuckDB also computes the
    # BM25 term-frequency part and hands over int32 rows and float32 weights (8 bytes a
    # posting). Together: 100k chunks load with a 0.6 GB peak instead of 1.0 GB.
    vocabulary_table = connection.execute(
        f"SELECT term, count(*) AS df, {bm25_idf_sql('count(*)', '$1')} AS idf"
        " FROM postings GROUP BY term ORDER BY term",
        [float(len(lengths))],
    ).fetchnumpy()
    average_length = float(lengths.mean()) if len(lengths) else 1.0
    weight = bm25_weight_sql("p.tf", "c.token_count", "$3", "$1", "$2")
    postings_table = connection.execute(
        "SELECT CAST(c.row AS INTEGER) AS row,"
        f" CAST({weight} AS FLOAT) AS weight"
        " FROM postings p JOIN (SELECT key, token_count,"
        " row_number() OVER (ORDER BY key) - 1 AS row FROM chunks) c USING (key)"
        " JOIN (SELECT term, row_number() OVER (ORDER BY term) AS term_id"
        " FROM (SELECT DISTINCT term FROM postings)) v USING (term) ORDER BY v.term_id",
        [k1, b, average_length or 1.0],
    ).fetchnumpy()
    terms = vocabulary_table["term"].tolist()
    document_frequency = np.asarray(vocabulary_table["df"], dtype=np.float64)
    offsets = np.concatenate([[0], np.cumsum(document_frequency, dtype=np.int64)])
    idf = np.asarray(vocabulary_table["idf"], dtype=np.float64)
    vocabulary = {term: index for index, term in enumerate(terms)}
    return _Postings(
        vocabulary,
        offsets,
        np.asarray(postings_table["row"], dtype=np.int32),
        np.asarray(postings_table["weight"], dtype=np.float32),
        idf,
    )


def _unit(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float32).ravel()
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector
