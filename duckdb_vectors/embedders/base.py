"""What every embedder is, and the helpers they share."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import parse_qsl

import numpy as np

# Hashing every byte of a multi-GB model at each start would cost seconds; above this size a
# file is fingerprinted by its size and its first and last bytes instead.
_FULL_HASH_LIMIT = 64 * 1024 * 1024
_SAMPLE_BYTES = 8 * 1024 * 1024
_DOCUMENTATION_SUFFIXES = {".md", ".txt.license", ".rst"}


@dataclass(frozen=True)
class EmbedderSpec:
    """A parsed backend string ``name[:argument][?option=value&...]`` plus where models live.

    Args:
        name: the registry name, e.g. ``fastembed``.
        argument: what follows the colon, usually a model name.
        options: ``key=value`` pairs after ``?``, e.g. ``hf:org/model?pooling=cls``.
        model_path: a local directory to load the model from instead of downloading it.
        cache_dir: where downloaded models are kept.
    """

    name: str
    argument: str = ""
    options: dict[str, str] = field(default_factory=dict)
    model_path: Path | None = None
    cache_dir: Path | None = None

    @classmethod
    def parse(
        cls, backend: str, model_path: Path | None = None, cache_dir: Path | None = None
    ) -> EmbedderSpec:
        head, _, query = backend.strip().partition("?")
        name, _, argument = head.partition(":")
        options = dict(parse_qsl(query, keep_blank_values=True))
        return cls(name.strip().lower(), argument.strip(), options, model_path, cache_dir)

    def __str__(self) -> str:
        text = f"{self.name}:{self.argument}" if self.argument else self.name
        if self.options:
            text += "?" + "&".join(f"{key}={value}" for key, value in sorted(self.options.items()))
        return text


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into fixed-width float32 vectors."""

    spec: str
    """The backend string recorded in the index manifest, e.g. ``fastembed:<model>``."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents: an array of shape ``(len(texts), dimension)``."""
        ...

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries (some models prefix queries differently from documents)."""
        ...

    @property
    def dimension(self) -> int:
        """The width of every vector this embedder returns."""
        ...

    def fingerprint(self) -> str | None:
        """A content hash of the model's files, or None when there are no local files."""
        ...

    def warm_up(self) -> None:
        """Load the model now so the first real request does not pay for it."""
        ...


class BaseEmbedder:
    """Shared behaviour: lazy, thread-safe loading; dimension found from a real embedding."""

    spec: str = ""

    def __init__(self) -> None:
        self._load_lock = threading.Lock()
        self._dimension: int | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)

    def windows(self, texts: Sequence[str]) -> list[int]:
        """How many of the model's windows (the most tokens it embeds) each text needs; 1
        for every text when the model embeds any length."""
        return [1] * len(texts)

    def is_static(self) -> bool:
        """Whether a text's vector is a sum of its tokens' (a table lookup, no attention):
        such a vector is a weaker ranking than a transformer's, so fusion leans on BM25."""
        return False

    def english_only(self) -> bool:
        """Whether the model was trained on English alone: its vector of a question written in
        another script is noise, so BM25 ranks such a question (``search.Query``)."""
        return False

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension probe"]).shape[1])
        return self._dimension

    def fingerprint(self) -> str | None:
        return None

    def warm_up(self) -> None:
        self.embed_query(["warm up"])


def as_matrix(vectors: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """Stack vectors into a C-contiguous float32 matrix."""
    return np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))


def fingerprint_directory(directory: Path) -> str:
    """A sha256 over the relative paths and contents of the model files under ``directory``.

    Documentation and hidden files (README.md, LICENSE, .gitattributes) are left out, so the
    same model downloaded from the hub or copied into an image gives the same fingerprint.
    """
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if _is_model_file(p, directory)):
        digest.update(str(path.relative_to(directory)).encode())
        digest.update(_file_digest(path))
    return digest.hexdigest()


def _is_model_file(path: Path, directory: Path) -> bool:
    relative = path.relative_to(directory)
    if any(part.startswith(".") for part in relative.parts) or not path.is_file():
        return False
    return path.suffix.lower() not in _DOCUMENTATION_SUFFIXES and path.stem.upper() != "LICENSE"


def _file_digest(path: Path) -> bytes:
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with path.open("rb") as handle:
        if size <= _FULL_HASH_LIMIT:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        else:
            digest.update(handle.read(_SAMPLE_BYTES))
            handle.seek(size - _SAMPLE_BYTES)
            digest.update(handle.read(_SAMPLE_BYTES))
    return digest.digest()
