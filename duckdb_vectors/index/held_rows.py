"""The chunk rows a snapshot returns with its hits, held in memory with little per row.

A Python object per value cost a reader at 100k chunks of 40 words 60 MB for 37 MB of strings:
a tuple per row, and about 50 bytes of header on every string. Here the values that repeat from
chunk to chunk (a document's source and title, empty metadata, one write's time) are held once,
a row pointing at them by number, and the etags (32 hex digits each) are one ASCII buffer with
an offset per row. Texts and ids stay strings: decoding them from a buffer when a hit is built
cost about 1 us a hit (a vector query at 5k chunks takes 0.15-0.25 ms), to save 10 MB at 100k.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from itertools import accumulate, islice
from typing import Any

import duckdb
import numpy as np

from ..models import Chunk
from . import chunk_table

# Chunks read per query: a query's result is held twice while it is converted (by DuckDB, and
# as Python objects); 100k chunks in one query put 109 MB on top of what the rows keep.
ROWS_PER_READ = 16_384
# The values that repeat from chunk to chunk, held once per distinct combination.
_SHARED = ("source", "title", "metadata", "stamped_at")


class _Strings:
    """Strings as one UTF-8 buffer: row ``i`` is ``buffer[starts[i]:starts[i+1]]``."""

    def __init__(self, size: int) -> None:
        self.buffer = bytearray(size)
        self.starts = array("q", [0])

    def extend(self, values: list[str]) -> None:
        pieces = [value.encode() for value in values]
        start, joined = self.starts[-1], b"".join(pieces)
        self.buffer[start : start + len(joined)] = joined
        self.starts.extend(islice(accumulate(map(len, pieces), initial=start), 1, None))

    def at(self, row: int) -> str:
        starts = self.starts
        return self.buffer[starts[row] : starts[row + 1]].decode()


class _Numbered:
    """Values held once each, and for each row the number of its value."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.numbers = array("i")
        self.number_of: dict[Any, int] = {}  # while rows are added

    def extend(self, values: Iterable[Any]) -> None:
        number_of, held = self.number_of, self.values
        for value in values:
            number = number_of.get(value)
            if number is None:
                number = number_of[value] = len(held)
                held.append(value)
            self.numbers.append(number)

    def at(self, row: int) -> Any:
        return self.values[self.numbers[row]]


class HeldRows:
    """The ``chunk_table.CHUNK_SELECT`` rows of a snapshot's chunks, in key order.

    Args:
        etag_bytes: the etags' length in all, so their buffer is made once at its size (a
            growing one would be copied, and keep up to an eighth spare).
    """

    def __init__(self, etag_bytes: int) -> None:
        self._etags = _Strings(etag_bytes)
        self._chunk_ids: list[str] = []
        self._texts: list[str] = []
        self._positions = _Numbered()
        self._shared = _Numbered()

    def __len__(self) -> int:
        return len(self._positions.numbers)

    def append(self, columns: dict[str, np.ndarray]) -> None:
        """Add the rows of a ``CHUNK_SELECT`` batch read with ``fetchnumpy``."""
        self._chunk_ids += columns["chunk_id"].tolist()
        self._texts += columns["text"].tolist()
        self._etags.extend(columns["etag"].tolist())
        self._positions.extend(columns["position"].tolist())
        self._shared.extend(zip(*(columns[name].tolist() for name in _SHARED), strict=True))

    def chunk(self, row: int) -> Chunk:
        """Row ``row`` as the ``Chunk`` a hit carries (``chunk_table.decode``)."""
        source, title, metadata, stamped_at = self._shared.at(row)
        # In the order of ``CHUNK_FIELDS``, which ``decode`` reads them in (a test holds it).
        return chunk_table.decode(
            (
                self._chunk_ids[row],
                self._texts[row],
                source,
                self._positions.at(row),
                title,
                metadata,
                self._etags.at(row),
                stamped_at,
            )
        )

    def document(self, row: int) -> str:
        """Row ``row``'s document (``chunk_table.document_of``)."""
        return chunk_table.document_of(self._shared.at(row)[0], self._chunk_ids[row])

    def shared_values(self) -> list[tuple[Any, ...]]:
        """Each distinct combination of the repeating values (``_SHARED``) held, once."""
        return list(self._shared.values)

    def loaded(self) -> None:
        """Every row is in: let go of what numbered the values as they came."""
        self._positions.number_of = self._shared.number_of = {}


def read(connection: duckdb.DuckDBPyConnection, keys: np.ndarray) -> HeldRows:
    """The rows of the chunks with ``keys`` (every chunk, ascending), ``ROWS_PER_READ`` keys a
    query."""
    rows = HeldRows(chunk_table.etag_bytes(connection))
    for start in range(0, len(keys), ROWS_PER_READ):
        low, high = int(keys[start]), int(keys[min(start + ROWS_PER_READ, len(keys)) - 1])
        rows.append(chunk_table.columns_between(connection, low, high))
    rows.loaded()
    return rows
