"""int8 vectors: a quarter of float32's memory, ranked approximately, then rescored exactly.

A row is stored as the int8 codes of its direction, ``round(127 * x / max|x|)``: symmetric,
one scale per row, which ranks as well as per-dimension scales and needs no statistics of the
other rows, so a write codes only its own rows and old codes stay valid. The scale is not
stored: the rows are unit vectors, so ``1 / |codes|`` gives back a row's length, and the
approximate score is the cosine between the quantized query and the codes. The codes (a
``TINYINT[d]`` column) are all an index keeps; the approximate ranking only decides which
``RESCORE_FACTOR * k`` candidates are rescored with their exact float32 vectors.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from importlib.util import find_spec

import numpy as np

from ..index.vector_codes import WIDEN_BLOCK, code_scales, int8_codes, reciprocal
from .ranking import tie_order

# Exact top-k needs the best k of the exact scores to be among the best RESCORE_FACTOR * k of
# the approximate ones: 1.5x sufficed at 1M rows (recall@10 1.0), 2x leaves room for other
# models' vectors.
RESCORE_FACTOR = 2
# Rows scored per kernel call: bounds the gather of a subset's codes (16 MB at 256 dimensions).
_BLOCK = 65_536

ExactVectors = Callable[[np.ndarray], np.ndarray]
# ``kernel(codes, query, out)`` writes ``codes[i] . query`` (int8 rows, an int8 query) to
# ``out[i]`` (float32).
DotKernel = Callable[[np.ndarray, np.ndarray, np.ndarray], None]


def _numpy_dots(codes: np.ndarray, query: np.ndarray, out: np.ndarray) -> None:
    # numpy has no BLAS for int8: widen a block to float32 and use sgemv. Sums of up to 1040
    # products of int8 stay below 2**24, so float32 adds them exactly, as an int8 kernel does.
    widened = np.empty((min(WIDEN_BLOCK, len(codes)), codes.shape[1]), dtype=np.float32)
    query_float = query.astype(np.float32)
    for start in range(0, len(codes), WIDEN_BLOCK):
        block = codes[start : start + WIDEN_BLOCK]
        np.copyto(widened[: len(block)], block, casting="unsafe")
        np.dot(widened[: len(block)], query_float, out=out[start : start + len(block)])


def _numkong_dots(codes: np.ndarray, query: np.ndarray, out: np.ndarray) -> None:
    # Imported on first use, which a process that never ranks int8 codes need not pay. One
    # thread: concurrent queries keep the other cores busy.
    import_module("numkong").cdist(query[None], codes, metric="dot", out=out[None])


# The dot-product kernels this environment has, the fastest first: numkong (the optional extra
# ``int8``) has SIMD int8 dot products.
KERNELS: dict[str, DotKernel] = {"numkong": _numkong_dots} if find_spec("numkong") else {}
KERNELS["numpy"] = _numpy_dots


class Int8Vectors:
    """Rows as int8 codes with approximate cosine scores (see the module's docstring).

    Args:
        codes: ``int8_codes`` of unit vectors, e.g. read back from a ``TINYINT[d]`` column.
        kernel: a name in ``KERNELS``; the fastest available by default. Every kernel returns
            the same scores.

    Memory: the codes and one float32 per row. A query adds a float32 score per row it ranks
    and at most one block of a subset's gathered codes, never a rows x dimension array.
    """

    def __init__(self, codes: np.ndarray, kernel: str | None = None) -> None:
        if not isinstance(codes, np.ndarray) or codes.dtype != np.int8 or codes.ndim != 2:
            raise ValueError("codes must be a 2-D int8 array (rows x dimension) of int8_codes")
        if kernel is not None and kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
        self.codes = np.ascontiguousarray(codes)
        self._dots = KERNELS[kernel or next(iter(KERNELS))]
        self.inverse_norms = self._inverse_norms()

    @classmethod
    def quantize(cls, vectors: np.ndarray, kernel: str | None = None) -> Int8Vectors:
        """Code ``vectors`` (rows x dimension, L2-normalised float32)."""
        return cls(int8_codes(vectors), kernel)

    def __len__(self) -> int:
        return len(self.codes)

    @property
    def dimension(self) -> int:
        return self.codes.shape[1]

    @property
    def nbytes(self) -> int:
        return self.codes.nbytes + self.inverse_norms.nbytes

    def scores(self, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Approximate cosine similarities of ``query`` to every row, or to ``rows`` (indices,
        in the order given), as float32."""
        query_codes, query_inverse_norm = self._coded_query(query)
        rows = None if rows is None else np.asarray(rows)
        count = len(self) if rows is None else len(rows)
        scores = np.empty(count, dtype=np.float32)
        for start in range(0, count, _BLOCK):
            # Views of all rows, or small gathered copies of ``rows``.
            span = slice(start, start + _BLOCK)
            block = self.codes[span] if rows is None else self.codes[rows[span]]
            self._dots(block, query_codes, scores[span])
        scores *= self.inverse_norms if rows is None else self.inverse_norms[rows]
        scores *= query_inverse_norm
        return scores

    def top(
        self,
        query: np.ndarray,
        k: int,
        exact_vectors: ExactVectors,
        rows: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The exact best ``k`` rows for ``query`` (of ``rows``, if given); see ``rescore``."""
        return rescore(query, self.scores(query, rows), k, exact_vectors, rows)

    def _coded_query(self, query: np.ndarray) -> tuple[np.ndarray, float]:
        vector = np.asarray(query, dtype=np.float32).ravel()
        if len(vector) != self.dimension:
            raise ValueError(
                f"the query vector has {len(vector)} dimensions, the int8 vectors {self.dimension}"
            )
        if not np.isfinite(vector).all():
            raise ValueError("the query vector must not contain NaN or infinity")
        codes = np.rint(vector * code_scales(vector[None])[0]).astype(np.int8)
        norm = float(np.linalg.norm(codes.astype(np.float32)))
        return codes, 1.0 / norm if norm else 0.0

    def _inverse_norms(self) -> np.ndarray:
        """1 / |codes| per row (0 for a zero row): the row's scale, as it is a unit vector."""
        inverse = np.empty(len(self.codes), dtype=np.float32)
        for start in range(0, len(self.codes), WIDEN_BLOCK):
            widened = self.codes[start : start + WIDEN_BLOCK].astype(np.float32)
            norms = np.sqrt(np.einsum("ij,ij->i", widened, widened))
            inverse[start : start + len(norms)] = reciprocal(norms)
        return inverse


def rescore(
    query: np.ndarray,
    approximate: np.ndarray,
    k: int,
    exact_vectors: ExactVectors,
    rows: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The exact best ``k``: the ``RESCORE_FACTOR * k`` best ``approximate`` scores, rescored.

    Args:
        query: the query, a unit float32 vector.
        approximate: ``Int8Vectors.scores`` for all rows, or for ``rows``.
        k: how many rows to return.
        exact_vectors: returns the stored float32 vectors (len x dimension) of the row indices
            it is given, in that order; they are L2-normalised here.
        rows: the row indices ``approximate`` belongs to; None for all rows.

    Returns:
        Row indices and their exact cosine scores (float32), best first; ties within
        ``ranking.TIE_TOLERANCE`` by ascending row, as ``ranking.tie_order`` orders keys.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if len(approximate) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    depth = min(RESCORE_FACTOR * k, len(approximate))
    candidates = (
        np.argpartition(approximate, len(approximate) - depth)[len(approximate) - depth :]
        if depth < len(approximate)
        else np.arange(len(approximate))
    )
    candidate_rows = candidates if rows is None else np.asarray(rows)[candidates]
    vectors = np.asarray(exact_vectors(candidate_rows), dtype=np.float32)
    if vectors.shape != (len(candidate_rows), len(np.ravel(query))):
        raise ValueError(
            f"exact_vectors returned shape {vectors.shape} for {len(candidate_rows)} rows; "
            f"it must return one {len(np.ravel(query))}-dimensional vector per row"
        )
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    exact = (vectors * reciprocal(norms)) @ np.asarray(query, dtype=np.float32).ravel()
    order = tie_order(candidate_rows, exact)[:k]
    return candidate_rows[order], exact[order]
