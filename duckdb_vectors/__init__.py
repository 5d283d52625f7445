"""duckdb-vectors: one DuckDB file is one index; hybrid retrieval with no server.

Every name below loads its module on first use, so that importing a part of the package (the
console script, a chunker) does not import all of it: the command line stops cleanly on
Ctrl-C from its first moment (``console``), and a process that only searches does not load
the chunkers and their parsers.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .chunkers import register_chunker
    from .citations import UrlRule
    from .config import FusionSettings, Settings
    from .embedders import (
        Embedder,
        EmbedderSpec,
        available_embedders,
        get_embedder,
        register_embedder,
    )
    from .errors import (
        DuckDBVectorsError,
        EmbedderError,
        IndexMismatchError,
        InvalidFilterError,
        InvalidRankingSQLError,
        InvalidSettingError,
        InvalidSourceError,
        InvalidUrlError,
        NotAnIndexError,
        ReadOnlyError,
        SliceError,
    )
    from .index.manifest import Manifest, SourceRecord
    from .indexer import IndexSummary, index_folder, index_source
    from .models import Chunk, IndexReport, SearchResult, SearchResults, VectorPage
    from .parquet_import import ParquetSummary, index_parquet
    from .sources import Source, SourceOptions, open_source
    from .store import VectorStore, WriteStats

# Each public name, and the module that holds it.
_MODULES = {
    "register_chunker": "chunkers",
    "UrlRule": "citations",
    "FusionSettings": "config",
    "Settings": "config",
    **dict.fromkeys(
        ("Embedder", "EmbedderSpec", "available_embedders", "get_embedder", "register_embedder"),
        "embedders",
    ),
    **dict.fromkeys(
        (
            "DuckDBVectorsError",
            "EmbedderError",
            "IndexMismatchError",
            "InvalidFilterError",
            "InvalidRankingSQLError",
            "InvalidSettingError",
            "InvalidSourceError",
            "InvalidUrlError",
            "NotAnIndexError",
            "ReadOnlyError",
            "SliceError",
        ),
        "errors",
    ),
    "Manifest": "index.manifest",
    "SourceRecord": "index.manifest",
    "IndexSummary": "indexer",
    "index_folder": "indexer",
    "index_source": "indexer",
    **dict.fromkeys(
        ("Chunk", "IndexReport", "SearchResult", "SearchResults", "VectorPage"), "models"
    ),
    "ParquetSummary": "parquet_import",
    "index_parquet": "parquet_import",
    **dict.fromkeys(("Source", "SourceOptions", "open_source"), "sources"),
    "VectorStore": "store",
    "WriteStats": "store",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODULES])


__all__ = sorted(_MODULES)
