"""Ranking primitives both searchers share: the order of ties, and the fusion of the vector
and BM25 rankings into one list. Nothing here reads the index, so ``quantization`` orders its
candidates by the same rule without depending on the search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..config import FusionSettings

# Scores closer than this (relative to the larger, at least 1) are a tie, and ties are ordered by
# key, the order chunks were first written. DuckDB and numpy sum float32 products in different
# orders, so two chunks that score the same exactly can differ by ~1e-7 on one path and not on
# the other: without a tolerance the two paths would break such ties differently.
TIE_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Ranking:
    """One signal's candidates, best first: chunk keys and their scores."""

    keys: np.ndarray
    scores: np.ndarray

    @classmethod
    def empty(cls) -> Ranking:
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))

    @classmethod
    def ordered(cls, keys: np.ndarray, scores: np.ndarray, depth: int) -> Ranking:
        """The ``depth`` best of the candidates, in ``tie_order``."""
        scores = scores.astype(np.float64)
        order = tie_order(keys, scores)[:depth]
        return cls(keys[order], scores[order])

    def __len__(self) -> int:
        return len(self.keys)


@dataclass(frozen=True)
class FusedRanking:
    """The fused list, best first, with each signal's 1-based rank (0 where it had none)."""

    keys: np.ndarray
    scores: np.ndarray
    vector_ranks: np.ndarray
    text_ranks: np.ndarray

    def head(self, count: int) -> FusedRanking:
        return self if len(self.keys) <= count else self.at(slice(0, count))

    def at(self, rows: slice | np.ndarray) -> FusedRanking:
        """The entries at ``rows`` (a slice or positions), in that order."""
        return FusedRanking(
            self.keys[rows], self.scores[rows], self.vector_ranks[rows], self.text_ranks[rows]
        )

    @classmethod
    def from_vector(cls, ranking: Ranking) -> FusedRanking:
        ranks = np.arange(1, len(ranking) + 1)
        return cls(ranking.keys, ranking.scores, ranks, np.zeros(len(ranks), ranks.dtype))

    @classmethod
    def from_text(cls, ranking: Ranking) -> FusedRanking:
        ranks = np.arange(1, len(ranking) + 1)
        return cls(ranking.keys, ranking.scores, np.zeros(len(ranks), ranks.dtype), ranks)

    @classmethod
    def text_then_vector(cls, text: Ranking, vector: Ranking) -> FusedRanking:
        """BM25's ranking (its scores), then the vector's candidates BM25 did not match (score
        0), in the vector's order."""
        rest = ~np.isin(vector.keys, text.keys)
        keys = np.concatenate([text.keys, vector.keys[rest]])
        scores = np.concatenate([text.scores, np.zeros(int(rest.sum()))])
        text_ranks = np.zeros(len(keys), dtype=np.int64)
        text_ranks[: len(text)] = np.arange(1, len(text) + 1)
        vector_rank_of = dict(zip(vector.keys.tolist(), range(1, len(vector) + 1), strict=True))
        vector_ranks = np.array([vector_rank_of.get(key, 0) for key in keys.tolist()], np.int64)
        return cls(keys, scores, vector_ranks, text_ranks)


def tie_order(keys: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """The order of best score first, ties (see TIE_TOLERANCE) by ascending key."""
    by_score = np.lexsort((keys, -scores))
    if len(by_score) < 2:
        return by_score
    ordered = scores[by_score]
    gaps = ordered[:-1] - ordered[1:]
    # No near-ties (the usual case): every gap beats twice the tolerance at the largest
    # magnitude, so the score order stands without comparing each gap with its own tolerance
    # (twice: float32 scores round that comparison's bound differently).
    largest = max(abs(float(ordered[0])), abs(float(ordered[-1])), 1.0)
    if np.minimum.reduce(gaps) > 2 * TIE_TOLERANCE * largest:  # gaps.min(), less wrapped
        return by_score
    apart = gaps > TIE_TOLERANCE * np.maximum(np.abs(ordered[:-1]), 1.0)
    if apart.all():
        return by_score
    runs = np.concatenate([[0], np.cumsum(apart)])
    return by_score[np.lexsort((keys[by_score], runs))]


def fuse(vector: Ranking, lexical: Ranking, settings: FusionSettings) -> FusedRanking:
    """Fuse the two rankings into one list, over the union of their candidates.

    ``relative`` (default): relative score fusion, ``w * bm25 / max(bm25) + (1 - w) * cos /
    max(cos)``, each signal divided by its best candidate's score. A chunk outside the vector
    candidates gets the lowest of theirs (every chunk has a cosine, and its is below theirs); a
    chunk outside the BM25 candidates gets nothing from BM25, so that when BM25 matches a
    single chunk (an identifier) the others do not count as perfect matches too.
    ``rrf``: Reciprocal Rank Fusion, ``w / (k + text_rank) + (1 - w) / (k + vector_rank)``.
    ``w`` is ``settings.lexical_weight``.
    """
    # One sort aligns both lists on the union of their keys: ``slots[i]`` is where the i-th
    # key of the concatenation lands in ``keys``.
    keys, slots = np.unique(np.concatenate([vector.keys, lexical.keys]), return_inverse=True)
    vector_slots, text_slots = slots[: len(vector)], slots[len(vector) :]
    vector_ranks = _ranks_at(vector_slots, len(keys))
    text_ranks = _ranks_at(text_slots, len(keys))
    weight = settings.lexical_weight
    if settings.method == "rrf":
        vector_part = _reciprocal(vector_ranks, settings.rrf_k)
        text_part = _reciprocal(text_ranks, settings.rrf_k)
    else:
        vector_part = _relative_at(vector_slots, vector.scores, len(keys), outside="lowest")
        text_part = _relative_at(text_slots, lexical.scores, len(keys), outside="zero")
    scores = (1 - weight) * vector_part + weight * text_part
    order = tie_order(keys, scores)
    return FusedRanking(keys[order], scores[order], vector_ranks[order], text_ranks[order])


def _ranks_at(slots: np.ndarray, size: int) -> np.ndarray:
    """1-based ranks placed at ``slots`` of an array of ``size``, 0 elsewhere."""
    ranks = np.zeros(size, dtype=np.int64)
    ranks[slots] = np.arange(1, len(slots) + 1)
    return ranks


def _reciprocal(ranks: np.ndarray, k: int) -> np.ndarray:
    return np.where(ranks > 0, 1.0 / (k + ranks), 0.0)


def _relative_at(
    slots: np.ndarray, scores: np.ndarray, size: int, outside: Literal["lowest", "zero"]
) -> np.ndarray:
    """Each score divided by the best, placed at ``slots``; elsewhere the lowest such value,
    or 0."""
    if len(scores) == 0:
        return np.zeros(size, dtype=np.float64)
    best, worst = float(scores.max()), float(scores.min())
    if best > 0:
        relative = scores / best
    elif best > worst:  # all scores <= 0 (cosine can be): keep the order, on a 0..1 scale
        relative = (scores - worst) / (best - worst)
    else:
        relative = np.ones(len(scores))
    filler = float(relative.min()) if outside == "lowest" else 0.0
    values = np.full(size, filler, dtype=np.float64)
    values[slots] = relative
    return values
