"""Whether an index and what opens it belong together: the backend, model files, dimension,
quantization and language it was built with, against those in use now. Each rule raises
``IndexMismatchError`` saying what differs and what to do; nothing here touches the file.
"""

from __future__ import annotations

from pathlib import Path

from .config import DEFAULT_BACKEND, Quantization
from .embedders import Embedder, canonical_backend
from .errors import IndexMismatchError
from .index.manifest import Manifest
from .index.terms import DEFAULT_LANGUAGE, checked_language


def check_stored_dimension(db_path: Path, manifest: Manifest | None, stored: int | None) -> None:
    """The manifest and the vectors column must agree (else the file was altered)."""
    if manifest is not None and stored is not None and manifest.dimension != stored:
        raise IndexMismatchError(
            f"{db_path}: its manifest says {manifest.dimension} dimensions but its vectors"
            f" have {stored}; the file was altered, re-index it"
        )


def resolve_backend(db_path: Path, manifest: Manifest | None, requested: str | None) -> str:
    """The backend to use: the one asked for, which must be the recorded one if there is one."""
    recorded = manifest.backend if manifest else None
    if requested is None:
        return recorded or DEFAULT_BACKEND
    requested = canonical_backend(requested)
    if recorded is not None and requested != canonical_backend(recorded):
        raise IndexMismatchError(
            f"{db_path} was built with backend {recorded}, not {requested}; "
            f"use --backend {recorded} (or leave it unset), or re-index with the new backend"
        )
    return requested


def resolve_quantization(
    db_path: Path, manifest: Manifest | None, requested: Quantization | None, read_only: bool
) -> Quantization | None:
    """The quantization to keep: the recorded one, or the one asked for.

    Asking for one on an index that has none converts it (the caller codes its vectors); an
    index cannot be converted read-only, nor from one quantization to another.
    """
    recorded = manifest.quantization if manifest else None
    if requested is None or requested == recorded:
        return recorded
    if recorded is not None:
        raise IndexMismatchError(
            f"{db_path} is quantized {recorded}, not {requested}; leave --quantize unset,"
            f" or re-index into a new file with --quantize {requested}"
        )
    if read_only and manifest is not None:
        raise IndexMismatchError(
            f"{db_path} is not quantized and is open read-only; convert it once with:"
            f" duckdb-vectors upgrade --db {db_path} --quantize {requested}"
        )
    return requested


def resolve_language(db_path: Path, manifest: Manifest | None, requested: str | None) -> str:
    """The language of the index's word forms: the one asked for (another than the recorded
    one re-tokenizes the index: see ``retokenize``), else the recorded one."""
    if requested is not None:
        return checked_language(requested)
    return manifest.language if manifest is not None else DEFAULT_LANGUAGE


def check_embedder(db_path: Path, manifest: Manifest, embedder: Embedder, backend: str) -> None:
    """A loaded model must make vectors of the recorded width from the recorded files."""
    if embedder.dimension != manifest.dimension:
        raise IndexMismatchError(
            f"{db_path} holds {manifest.dimension}-dimensional vectors but "
            f"{backend} makes {embedder.dimension}-dimensional ones; re-index"
        )
    recorded, actual = manifest.model_fingerprint, embedder.fingerprint()
    if recorded and actual and recorded != actual:
        raise IndexMismatchError(
            f"{db_path} was built with other model files for {backend} "
            f"(fingerprint {recorded[:12]}, this model {actual[:12]}); "
            "use the model it was built with, or re-index"
        )


def check_written_dimension(db_path: Path, manifest: Manifest | None, dimension: int) -> None:
    """Vectors being written must have the recorded width."""
    if manifest is not None and dimension != manifest.dimension:
        raise IndexMismatchError(
            f"{db_path} holds {manifest.dimension}-dimensional vectors, not {dimension}"
        )
