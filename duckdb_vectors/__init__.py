"""duckdb-vectors: one DuckDB file is one index; hybrid retrieval with no server."""

from .chunkers import register_chunker
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
from .indexer import IndexSummary, index_folder
from .manifest import Manifest
from .models import Chunk, IndexReport, SearchResult, SearchResults, VectorPage
from .parquet_import import ParquetSummary, index_parquet
from .store import VectorStore, WriteStats

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
