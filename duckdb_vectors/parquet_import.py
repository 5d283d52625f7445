"""``index_parquet``: write chunks embedded elsewhere (a Spark or Ray job) from Parquet files.

Each row is ``chunk_id, text, embedding`` and optionally ``title, source, position,
metadata``. DuckDB reads the files on a separate in-memory connection (the index's refuses
external access) and hands them over in Arrow batches, so memory is bounded by a batch. Writes
are incremental like ``index``'s.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
from pydantic import BaseModel

from .errors import DuckDBVectorsError
from .index.db import first_line, scalar, without_progress_bar
from .models import GIVEN_FIELDS, value_types
from .progress import counted
from .rows import ChunkColumns, metadata_json
from .store import VectorStore

# Rows per Arrow batch: large enough that per-batch statements are noise, small enough to
# bound memory.
READ_BATCH = 16_384


def reader_connection() -> duckdb.DuckDBPyConnection:
    """The in-memory connection reading the files, with no progress bar (it spans the import)."""
    # One thread: each decodes a whole row group, and reading ahead only fills memory while
    # the index's writes set the pace.
    return without_progress_bar(duckdb.connect(":memory:", config={"threads": 1}))


# The DuckDB types a Parquet column may have, for each type a ``Chunk`` field holds.
_DUCKDB_TYPES: dict[type, tuple[str, ...]] = {
    str: ("VARCHAR",),
    int: ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT"),
    dict: ("VARCHAR", "JSON"),  # a JSON object per row
}
# Each column a row may carry, with the DuckDB types accepted for it.
COLUMNS: dict[str, tuple[str, ...]] = {
    **{
        name: tuple(t for kind in value_types(name) - {type(None)} for t in _DUCKDB_TYPES[kind])
        for name in GIVEN_FIELDS
    },
    "embedding": ("FLOAT[", "DOUBLE["),
}
REQUIRED = ("chunk_id", "text", "embedding")


class ParquetSummary(BaseModel):
    """What an ``index_parquet`` run did."""

    parquet: str
    files: int = 0
    rows: int = 0
    chunks_added: int = 0
    chunks_updated: int = 0
    chunks_unchanged: int = 0
    chunks_pruned: int = 0
    seconds: float = 0.0


def index_parquet(
    store: VectorStore,
    path_or_glob: str | Path,
    *,
    source_prefix: str | None = None,
    progress: bool | None = None,
) -> ParquetSummary:
    """Upsert the rows of the Parquet files matching ``path_or_glob`` into ``store``.

    Args:
        store: a read-write store; its vectors' width (the recorded one, else its backend's)
            must be the files' ``embedding`` width, so queries embedded by it compare.
        path_or_glob: a Parquet file or a glob such as ``out/part-*.parquet``.
        source_prefix: prepended to every row's ``source``; the run then owns that scope:
            chunks under it that the files no longer hold are pruned. Without it, a pure upsert.
        progress: show the rows imported on stderr; default: only when stderr is a terminal.

    Raises:
        DuckDBVectorsError: no file matches, a column is missing or has the wrong type, or a
            vector has the wrong width or is not finite; the message names the file or column.
    """
    started = time.monotonic()
    pattern = str(path_or_glob)
    dimension = store.manifest.dimension if store.manifest else store.embedder.dimension
    stamp = datetime.now(UTC)
    summary = ParquetSummary(parquet=pattern)
    _require_pyarrow()
    with reader_connection() as reader:
        files = _matching_files(reader, pattern)
        summary.files = len(files)
        columns = _checked_columns(reader, files)
        total = int(
            scalar(reader, "SELECT sum(num_rows) FROM parquet_file_metadata($1)", [files]) or 0
        )
        with counted(total, "row", "importing", progress) as advance, store.transaction():
            batches = _chunk_batches(reader, files, columns, dimension, source_prefix, advance)
            stats = store.put_vector_batches(batches, stamp)
            if source_prefix:
                summary.chunks_pruned = store.prune(source_prefix, stamp)
    summary.rows = total
    summary.chunks_added, summary.chunks_updated = stats.added, stats.updated
    summary.chunks_unchanged = stats.unchanged
    summary.seconds = round(time.monotonic() - started, 3)
    return summary


def _require_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401  # DuckDB streams record batches through it
    except ImportError:
        raise DuckDBVectorsError(
            "reading Parquet needs pyarrow: pip install 'duckdb-vectors[parquet]'"
        ) from None


def _matching_files(reader: duckdb.DuckDBPyConnection, pattern: str) -> list[str]:
    files = [row[0] for row in reader.execute("SELECT file FROM glob(?)", [pattern]).fetchall()]
    if not files:
        raise DuckDBVectorsError(f"no Parquet file matches {pattern}; pass a file or a glob")
    return sorted(files)


def _checked_columns(reader: duckdb.DuckDBPyConnection, files: list[str]) -> list[str]:
    """The known columns the files carry, each checked in each file."""
    present: set[str] = set()
    for file in files:
        try:
            described = reader.execute("DESCRIBE SELECT * FROM read_parquet(?)", [file]).fetchall()
        except duckdb.Error as error:
            message = f"{file} cannot be read as Parquet: {first_line(error)}"
            raise DuckDBVectorsError(message) from None
        types = {name: column_type for name, column_type, *_ in described}
        for name, accepted in COLUMNS.items():
            if name not in types:
                if name in REQUIRED:
                    raise DuckDBVectorsError(
                        f"{file} has no {name} column; rows need chunk_id, text and embedding"
                    )
                continue
            if not types[name].startswith(accepted):
                raise DuckDBVectorsError(
                    f"{file}: column {name} is {types[name]}, expected {' or '.join(accepted)}"
                )
            present.add(name)
    return [name for name in COLUMNS if name in present]


def _chunk_batches(
    reader: duckdb.DuckDBPyConnection,
    files: list[str],
    columns: list[str],
    dimension: int,
    source_prefix: str | None,
    advance: Callable[[int], None],
) -> Iterator[tuple[ChunkColumns, np.ndarray]]:
    """Chunks and their vectors, one Arrow batch at a time, checked as they come; ``advance``
    is told each batch's rows once it is written."""
    selected = ", ".join(
        f"len({name}) AS embedding_width, {name}::FLOAT[] AS {name}"
        if name == "embedding"
        else name
        for name in columns
    )
    result = reader.sql(
        f"SELECT {selected}, filename FROM read_parquet($files, union_by_name = true,"
        " filename = true)",
        params={"files": files},
    )
    for batch in result.to_arrow_reader(READ_BATCH):
        # Every column but the vectors as Python values; the vectors go to one matrix.
        table = batch.select([n for n in batch.schema.names if n != "embedding"]).to_pydict()
        if None in table["chunk_id"]:
            file = table["filename"][table["chunk_id"].index(None)]
            raise DuckDBVectorsError(f"{file}: a row has no chunk_id; every row needs one")
        vectors = _vectors(batch, table, dimension)
        yield _chunks(table, source_prefix or ""), vectors
        advance(batch.num_rows)


def _vectors(batch: object, table: dict[str, list], dimension: int) -> np.ndarray:
    widths = table["embedding_width"]
    for row, width in enumerate(widths):
        if width != dimension:
            found = "no embedding" if width is None else f"a {width}-dimensional embedding"
            raise DuckDBVectorsError(
                f"{table['filename'][row]}: chunk {table['chunk_id'][row]!r} has {found};"
                f" the index holds {dimension}-dimensional vectors"
            )
    values = batch.column("embedding").flatten()  # type: ignore[attr-defined]
    matrix = values.to_numpy(zero_copy_only=False).reshape(len(widths), dimension)
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        row = int(np.argmin(finite))
        raise DuckDBVectorsError(
            f"{table['filename'][row]}: chunk {table['chunk_id'][row]!r} has a NaN or infinite"
            " value in its embedding"
        )
    return matrix


def _chunks(table: dict[str, list], source_prefix: str) -> ChunkColumns:
    """The batch's chunks, column by column: the reader already typed every column."""
    ids = table["chunk_id"]
    empty = [None] * len(ids)
    columns = {name: table.get(name, empty) for name in GIVEN_FIELDS}
    columns["text"] = [text or "" for text in columns["text"]]
    columns["source"] = [
        source_prefix + source if source else source_prefix or None for source in columns["source"]
    ]
    files = table["filename"]
    columns["metadata"] = [
        metadata_json(_metadata(value, files[i]), i, ids[i]) if value else "{}"
        for i, value in enumerate(columns["metadata"])
    ]
    return ChunkColumns(columns)


def _metadata(value: str, file: str) -> dict:
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        raise DuckDBVectorsError(f"{file}: column metadata must hold JSON objects, got {value!r}")
    return parsed
