"""The ``vector_codes`` table: a quantized index's int8 codes, one row per chunk, by key.

The codes are derived data: ``quantization.int8_codes`` of each chunk's float32 ``embedding``,
which stays in ``chunks`` for exact rescoring. They are kept in step with ``chunks`` in two
places only, so the write paths themselves need not know about them: ``chunk_table.delete_keys``
deletes a chunk's codes with it, and ``sync`` codes every chunk that has none at the end of
each write transaction (``VectorStore.transaction``). A chunk's vector never changes in place
(a changed chunk is deleted and written again), so codes once made stay valid.

The table exists in every file from schema version 5; the ``codes`` column follows when the
index is first quantized (its width is the embedding's), as ``chunks.embedding`` follows the
first write.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import numpy as np

from .db import array_width, registered_arrow
from .quantization import int8_codes

TABLE = "vector_codes"
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
        # As one Arrow batch: a numpy column of one array per row is converted row by row
        # (48 s against 4.7 s for a million rows of 256 codes).
        with registered_arrow(connection, "new_codes", {"key": keys, "codes": codes}):
            connection.execute(f"INSERT INTO {TABLE} SELECT key, codes FROM new_codes")
    return len(missing)


def delete_keys(connection: duckdb.DuckDBPyConnection, keys: list[int]) -> None:
    """Delete the codes of these chunk keys (their chunks are being deleted)."""
    connection.execute(f"DELETE FROM {TABLE} WHERE key IN (SELECT unnest($1::BIGINT[]))", [keys])
