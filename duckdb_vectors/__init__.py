"""duckdb-vectors: one DuckDB file is one index; hybrid retrieval with no server."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .citations import UrlRule
from .config import FusionSettings, Settings
from .embedders import Embedder, EmbedderSpec, available_embedders, get_embedder, register_embedder
from .errors import (
    DuckDBVectorsError,
    EmbedderError,
    IndexMismatchError,
    InvalidFilterError,
    InvalidRankingSQLError,
    InvalidSettingError,
    InvalidUrlError,
    NotAnIndexError,
    ReadOnlyError,
    SliceError,
)
from .index.manifest import Manifest
from .models import Chunk, IndexReport, SearchResult, SearchResults, VectorPage
from .store import VectorStore, WriteStats

if TYPE_CHECKING:
    from .chunkers import register_chunker
    from .indexer import IndexSummary, index_folder
    from .parquet_import import ParquetSummary, index_parquet

# Indexing needs the chunkers and their parsers (0.4-0.7 s of imports): they load on first use,
# so a process that only searches (a one-shot ``duckdb-vectors search``) does not pay for them.
_LAZY = {
    "register_chunker": "chunkers",
    "IndexSummary": "indexer",
    "index_folder": "indexer",
    "ParquetSummary": "parquet_import",
    "index_parquet": "parquet_import",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "Chunk",
    "DuckDBVectorsError",
    "Embedder",
    "EmbedderError",
    "EmbedderSpec",
    "FusionSettings",
    "IndexMismatchError",
    "IndexReport",
    "IndexSummary",
    "InvalidFilterError",
    "InvalidRankingSQLError",
    "InvalidSettingError",
    "InvalidUrlError",
    "Manifest",
    "NotAnIndexError",
    "ParquetSummary",
    "ReadOnlyError",
    "SearchResult",
    "SearchResults",
    "Settings",
    "SliceError",
    "UrlRule",
    "VectorPage",
    "VectorStore",
    "WriteStats",
    "available_embedders",
    "get_embedder",
    "index_folder",
    "index_parquet",
    "register_chunker",
    "register_embedder",
]
