"""Okapi BM25's parameters and formula, owned here: as SQL (``search``, ``plain_sql``) and over
arrays (the in-memory index).

In an index of several libraries (``slices.library_sql``; an index without libraries is one):
the number of chunks and each term's document frequency are those of the libraries a search
covers (those its filter leaves any chunk of; all of them, unscoped), and each chunk's length is
weighed against its own library's average. Scoped to a library, a search ranks as in an index
of that library alone; across libraries a word weighs what it weighs in all of them, not in
the one library where it is rare (which ranked distractors first: docs/relevance.md, "Several
libraries in one index").
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
