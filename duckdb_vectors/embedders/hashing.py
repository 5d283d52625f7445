"""A deterministic, dependency-free embedder for tests and CI. Not for relevance."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from ..tokenizer import tokenize
from .base import BaseEmbedder, EmbedderSpec

DEFAULT_DIMENSION = 256


class HashingEmbedder(BaseEmbedder):
    """Feature hashing of tokens into a signed bag-of-words vector of ``dimension`` floats,
    L2-normalised."""

    def __init__(self, dimension: int = DEFAULT_DIMENSION) -> None:
        super().__init__()
        if dimension < 1:
            raise ValueError(f"hashing dimension must be positive, got {dimension}")
        self._dimension = dimension
        self.spec = f"hashing:{dimension}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        dimension = self.dimension
        matrix = np.zeros((len(texts), dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                bucket = int.from_bytes(
                    hashlib.blake2b(token.encode(), digest_size=8).digest(), "big"
                )
                matrix[row, bucket % dimension] += 1.0 if bucket >> 63 else -1.0
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1.0, norms)

    def is_static(self) -> bool:
        return True

    def fingerprint(self) -> str | None:
        return f"hashing-blake2b-{self.dimension}"


def create_hashing(spec: EmbedderSpec) -> HashingEmbedder:
    """Factory for ``hashing`` and ``hashing:<dimension>``."""
    if not spec.argument:
        return HashingEmbedder()
    if not spec.argument.isdigit():
        raise ValueError(f"'{spec}': the argument must be a dimension, e.g. hashing:384")
    return HashingEmbedder(int(spec.argument))
