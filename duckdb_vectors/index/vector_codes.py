"""The ``vector_codes`` table: a quantized index's int8 codes, one row per chunk, by key.

The codes are ``int8_codes`` of each chunk's float32 ``embedding`` (which stays for exact
rescoring), kept in step with ``chunks`` in two places only: ``chunk_table.delete_keys`` deletes
a chunk's codes with it, and ``sync`` codes every chunk that has none at the end of each write
transaction. A chunk's vector never changes in place, so codes once made stay valid. The
``codes`` column follows when the index is first quantized, as ``chunks.embedding`` follows the
first write.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import numpy as np

from .db import array_width, registered_arrow

TABLE = "vector_codes"
# Rows widened to float32 at a time (1 MB at 256 dimensions): small enough to stay in cache.
WIDEN_BLOCK = 1_024
# Chunks coded per statement: bounds the float32 vectors held while coding (64 MB at 256
# dimensions) when a whole index is quantized at once.
_SYNC_BATCH = 65_536


def create_empty(connection: duckdb.DuckDBPyConnection) -> None:
    """The table as an index that is not quantized has it: keys only, and no rows."""
    connection.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (key BIGINT NOT NULL)")


def width(connection: duckdb.DuckDBPyConnection) -> int | None:
    """The width of the ``codes`` column, or None while the index is not quantized."""
    return array_width(connection, TABLE, "codes")


def sync(
    connection: duckdb.DuckDBPyConnection,
    dimension: int,
    embeddings: Callable[[duckdb.DuckDBPyConnection, np.ndarray, int], np.ndarray],
) -> int:
    """Code every chunk that has no codes yet (all of them, the first time); return how many.
    ``embeddings``: their float32 vectors by key (``chunk_table.embeddings``, passed in because
    ``chunk_table`` imports this module to delete a chunk's codes with it).

    New chunks have the highest keys, so codes are appended in key order and the table stays
    stored in key order, as ``MemoryIndex`` reads it.
    """
    if width(connection) is None:  # no rows yet: the column can be added by recreating it
        connection.execute(
            f"CREATE OR REPLACE TABLE {TABLE} (key BIGINT NOT NULL, codes TINYINT[{dimension}]"
            " NOT NULL)"
        )
    missing = connection.sql(
        f"SELECT key FROM chunks ANTI JOIN {TABLE} USING (key) ORDER BY key"
    ).fetchnumpy()["key"]
    for start in range(0, len(missing), _SYNC_BATCH):
        keys = np.asarray(missing[start : start + _SYNC_BATCH], dtype=np.int64)
        codes = int8_codes(embeddings(connection, keys, dimension))
        # As one Arrow batch: a numpy column of one array per row is converted row by row.
        with registered_arrow(connection, "new_codes", {"key": keys, "codes": codes}):
            connection.execute(f"INSERT INTO {TABLE} SELECT key, codes FROM new_codes")
    return len(missing)


def delete_keys(connection: duckdb.DuckDBPyConnection, keys: list[int]) -> None:
    """Delete the codes of these chunk keys (their chunks are being deleted)."""
    connection.execute(f"DELETE FROM {TABLE} WHERE key IN (SELECT unnest($1::BIGINT[]))", [keys])


def int8_codes(vectors: np.ndarray) -> np.ndarray:
    """The int8 codes of ``vectors`` (rows x dimension, finite): what an index stores. Each row
    is coded on its own, so a batch can be coded as it is written; a zero row codes to zeros."""
    matrix = np.asarray(vectors)
    if matrix.ndim != 2 or not np.issubdtype(matrix.dtype, np.number):
        raise ValueError(
            f"vectors must be a 2-D numeric array (rows x dimension), got shape {matrix.shape}"
        )
    codes = np.empty(matrix.shape, dtype=np.int8)
    for start in range(0, len(matrix), WIDEN_BLOCK):
        block = np.asarray(matrix[start : start + WIDEN_BLOCK], dtype=np.float32)
        finite = np.isfinite(block).all(axis=1)
        if not finite.all():
            row = start + int(np.argmin(finite))
            raise ValueError(f"vectors must not contain NaN or infinity (row {row} does)")
        codes[start : start + len(block)] = np.rint(block * code_scales(block)[:, None])
    return codes


def code_scales(block: np.ndarray) -> np.ndarray:
    """Per row, the factor that maps its largest magnitude to 127 (0 for a zero row)."""
    peaks = np.abs(block).max(axis=1) if block.size else np.zeros(len(block), np.float32)
    return 127.0 * reciprocal(peaks)


def reciprocal(values: np.ndarray) -> np.ndarray:
    """1 / values, and 0 where a value is 0."""
    return np.divide(1.0, values, out=np.zeros_like(values), where=values > 0)
