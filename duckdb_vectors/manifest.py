"""The manifest: what built an index, recorded inside the index file itself.

It names the embedding backend, a content hash of the model files, the vector dimension, the
tokenizer, the DuckDB and package versions, the chunk count, a content hash over all chunks
and the build time. It is written in the same transaction as every change to the chunks, so it
always describes the file's content, and it can be read without loading any model.
"""

from __future__ import annotations

from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version

import duckdb
from pydantic import BaseModel, Field, ValidationError

from .db import first_row, scalar
from .errors import NotAnIndexError
from .schema import has_table


class Manifest(BaseModel):
    """What an index was built with, and a fingerprint of what it holds."""

    backend: str = Field(description="Embedder spec the vectors were made with.")
    model_fingerprint: str | None = Field(None, description="Content hash of the model files.")
    dimension: int = Field(description="Width of every stored vector.")
    tokenizer: str = Field(description="Name of the tokenizer behind the lexical index.")
    schema_version: int
    chunk_count: int = 0
    content_hash: str = Field("", description="sha256 over ids, etags, sources and metadata.")
    duckdb_version: str = Field(default_factory=lambda: duckdb.__version__)
    package_version: str = Field(default_factory=lambda: package_version())
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    built_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


def package_version() -> str:
    try:
        return version("duckdb-vectors")
    except PackageNotFoundError:
        return "unknown"


def read_manifest(connection: duckdb.DuckDBPyConnection) -> Manifest | None:
    if not has_table(connection, "manifest"):
        return None
    document = scalar(connection, "SELECT document FROM manifest WHERE id = 1")
    if not document:
        return None
    try:
        return Manifest.model_validate_json(document)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"]) or "the document"
        raise NotAnIndexError(f"its manifest is damaged ({where}: {problem['msg']})") from None


def write_manifest(connection: duckdb.DuckDBPyConnection, manifest: Manifest) -> None:
    connection.execute(
        "INSERT OR REPLACE INTO manifest (id, document) VALUES (1, ?)",
        [manifest.model_dump_json()],
    )


def content_statistics(connection: duckdb.DuckDBPyConnection) -> tuple[int, str]:
    """The chunk count and a content hash that depends only on what the chunks hold.

    Write times are left out, so indexing the same documents twice gives the same hash.
    """
    if not has_table(connection, "chunks"):
        return 0, ""
    row = first_row(
        connection,
        "SELECT count(*), coalesce(sha256(string_agg("
        "  concat_ws(chr(31), chunk_id, etag, coalesce(source, ''),"
        "            coalesce(CAST(position AS VARCHAR), ''),"
        "            coalesce(CAST(metadata AS VARCHAR), '')),"
        "  chr(30) ORDER BY chunk_id)), '') FROM chunks",
    )
    return (int(row[0]), str(row[1])) if row else (0, "")
