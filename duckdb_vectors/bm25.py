"""Okapi BM25's parameters and formula, owned here: as SQL (``search``, ``plain_sql``) and over
arrays (the in-memory index).

Its statistics (the number of chunks, their average length and each term's document frequency)
are counted over each library of the index apart (``slices.library_sql``; an index without
libraries is one), and a chunk is scored with its own library's: a library ranks the same in a
bundle as in an index of its own, whether a search is scoped to it or not, and a word common in
one library's docs but rare in another's weighs in each what it weighs there
(docs/relevance.md, "Several libraries").
"""

from __future__ import annotations

import numpy as np

# As Lucene >= 8 scores it: a chunk's score is the sum over query terms of idf * term weight.
BM25_K1 = 1.5  # Lucene's default is 1.2; 1.5 scored best on SciFact train
BM25_B = 0.75


def bm25_idf_sql(df: str, documents: str) -> str:
    """idf = ln(1 + (N - df + 0.5) / (df + 0.5)), over SQL expressions for df and N."""
    return f"ln(1 + ({documents} - {df} + 0.5) / ({df} + 0.5))"


def bm25_idf(df: np.ndarray, documents: float) -> np.ndarray:
    """``bm25_idf_sql`` over arrays (float64, as DuckDB computes it)."""
    return np.log(1 + (documents - df + 0.5) / (df + 0.5))


def bm25_weight_sql(tf: str, length: str, average: str, k1: str, b: str) -> str:
    """The term weight tf / (tf + k1 * (1 - b + b * length / average_length))."""
    return f"{tf} / ({tf} + {k1} * (1 - {b} + {b} * {length} / {average}))"


def bm25_weight(
    tf: np.ndarray, length: np.ndarray, average: np.ndarray, k1: float, b: float
) -> np.ndarray:
    """``bm25_weight_sql`` over arrays (``average``: each posting's average length, float32),
    in float32 (much faster than DuckDB over registered arrays); the tests holding memory and
    SQL rankings equal hold the two to one formula."""
    tf = tf.astype(np.float32)
    return tf / (tf + (k1 * (1 - b + b * length / average)).astype(np.float32))
