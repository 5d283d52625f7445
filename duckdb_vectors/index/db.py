"""Opening the DuckDB file and the few connection helpers everything else uses."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import Any

import duckdb
import nanoarrow
import numpy as np

from ..errors import DuckDBVectorsError, NotAnIndexError

# The oldest DuckDB release pyproject.toml accepts (``duckdb>=1.4``). Index files are written in
# its storage format: DuckDB 2.0 writes its own by default, which 1.x cannot open at all.
OLDEST_DUCKDB = "1.4.0"
CONNECTION_CONFIG = {
    # The index never needs files or network beyond itself; this also confines injected
    # ranking SQL (no read_csv, no COPY, no ATTACH) and keeps DuckDB from fetching extensions.
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    # Decides the format of a file DuckDB creates (a file keeps the one it was created with).
    "storage_compatibility_version": f"v{OLDEST_DUCKDB}",
    # A commit checkpoints once the WAL passes this: at DuckDB's default (16 MB) nearly every
    # large commit did. The cost: up to this much WAL to replay after a crash, and held in
    # memory until the checkpoint. ``VectorStore.close`` checkpoints, leaving no WAL.
    "checkpoint_threshold": "256MB",
}

# DuckDB's float codecs, off (the embedding column is the only float column): past a full row
# group, ALPRD stores vectors in more blocks than raw floats, which also read faster (see
# docs/performance.md). A file keeps the blocks it has; what is written from now on is raw.
FLOAT_CODECS = "alp,alprd,chimp,patas"


def connect(path: Path, read_only: bool, shown_as: Path | None = None) -> duckdb.DuckDBPyConnection:
    """Open the index file, turning DuckDB's errors into one-line, actionable ones that name
    it as ``shown_as`` (the index, when ``path`` is the copy of it being written)."""
    name = shown_as or path
    in_memory = str(path) == ":memory:"
    if read_only and in_memory:
        raise ValueError("an in-memory store cannot be read-only")
    if read_only and not path.is_file():
        raise NotAnIndexError(f"{name} does not exist; build an index first (duckdb-vectors index)")
    if not read_only and not in_memory:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        connection = duckdb.connect(str(path), read_only=read_only, config=CONNECTION_CONFIG)
    except duckdb.IOException as error:
        message = first_line(error)
        if "lock" in message.lower():
            raise DuckDBVectorsError(_lock_message(name, read_only, str(error))) from None
        raise NotAnIndexError(f"{name} cannot be opened: {message}") from None
    except duckdb.ConnectionException as error:
        if "different configuration" not in str(error):
            raise NotAnIndexError(f"{name} cannot be opened: {first_line(error)}") from None
        raise DuckDBVectorsError(
            f"{name} is already open in this process {'read-write' if read_only else 'read-only'};"
            " close that store first, or open this one the same way"
        ) from None
    except duckdb.Error as error:
        raise NotAnIndexError(f"{name} is not a DuckDB index file: {first_line(error)}") from None
    # A SET: as a ``duckdb.connect`` config the option is accepted and has no effect.
    connection.execute(f"SET disabled_compression_methods = '{FLOAT_CODECS}'")
    return without_progress_bar(connection)


def without_progress_bar(connection: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """``connection``, told not to draw DuckDB's bar on stderr during long scans: it does even
    when stderr is a log file (an MCP server's, a build's), and with ``--no-progress``; this
    library reports its own progress. (A per-connection option: no config can hold it.)"""
    connection.execute("SET enable_progress_bar = false")
    return connection


def _lock_message(path: Path, read_only: bool, error: str) -> str:
    holder = re.search(r"PID (\d+)", error)
    who = f"another process (PID {holder.group(1)})" if holder else "another process"
    if read_only:
        return f"{path} is locked: {who} has it open for writing; wait for it to finish"
    return (
        f"{path} is locked: {who} has it open, and writing needs the file to itself;"
        " stop its readers and servers (or the other writer) first"
    )


def first_row(
    connection: duckdb.DuckDBPyConnection, sql: str, parameters: list[Any] | None = None
) -> tuple[Any, ...] | None:
    # fetchall, not fetchone: DuckDB 2 keeps a half-read result open and refuses further work.
    rows = connection.execute(sql, parameters or []).fetchall()
    return rows[0] if rows else None


def scalar(
    connection: duckdb.DuckDBPyConnection, sql: str, parameters: list[Any] | None = None
) -> Any:
    row = first_row(connection, sql, parameters)
    return row[0] if row else None


def string_literal(value: str) -> str:
    """A SQL string literal of ``value`` (for SQL stored in the file, where no parameter can
    stand)."""
    return "'" + value.replace("'", "''") + "'"


def has_table(connection: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether the open file (not a temporary or attached one) has table ``name``."""
    return bool(
        scalar(
            connection,
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()"
            " AND schema_name = 'main' AND table_name = ?",
            [name],
        )
    )


def column_type(connection: duckdb.DuckDBPyConnection, table: str, column: str) -> str | None:
    """The SQL type of ``table.column`` in the open file, or None while it has no such column."""
    return scalar(
        connection,
        "SELECT data_type FROM duckdb_columns() WHERE database_name = current_database()"
        " AND table_name = $1 AND column_name = $2",
        [table, column],
    )


def array_width(connection: duckdb.DuckDBPyConnection, table: str, column: str) -> int | None:
    """The width of fixed-size array column ``table.column`` (``FLOAT[256]``: 256), or None
    while the open file's table has no such column."""
    data_type = column_type(connection, table, column)
    return int(str(data_type).rsplit("[", 1)[1].rstrip("]")) if data_type else None


def is_open(connection: duckdb.DuckDBPyConnection) -> bool:
    try:
        connection.execute("SELECT 1").fetchall()
    except duckdb.ConnectionException:
        return False
    return True


class Transaction:
    """BEGIN ... COMMIT, or ROLLBACK on any exception (KeyboardInterrupt included)."""

    def __init__(self, connection: duckdb.DuckDBPyConnection) -> None:
        self.connection = connection

    def __enter__(self) -> None:
        self.connection.execute("BEGIN TRANSACTION")

    def __exit__(self, exc_type: object, *_rest: object) -> None:
        self.connection.execute("COMMIT" if exc_type is None else "ROLLBACK")


# DuckDB's thread count is a setting of the database instance, which all of a process's
# connections to one file share: writes that overlap reserve threads once, the last restores.
_thread_reservations: dict[str, tuple[int, int]] = {}  # database -> (threads before, writes)
_thread_reservations_lock = threading.Lock()


@contextmanager
def threads_reserved(connection: duckdb.DuckDBPyConnection, reserved: int) -> Iterator[None]:
    """Run DuckDB on ``reserved`` fewer threads for a moment, then restore its setting.

    For work running beside DuckDB in this process (the embedding thread), so the two do not
    preempt each other. Changing the setting restarts DuckDB's worker threads, so only long
    writes use it.
    """
    database = _database_key(connection)
    with _thread_reservations_lock:
        threads, writes = _thread_reservations.get(database, (0, 0))
        if not writes:
            threads = int(scalar(connection, "SELECT current_setting('threads')"))
            connection.execute(f"SET threads = {max(1, threads - reserved)}")
        _thread_reservations[database] = (threads, writes + 1)
    try:
        yield
    finally:
        with _thread_reservations_lock:
            threads, writes = _thread_reservations.pop(database)
            if writes > 1:
                _thread_reservations[database] = (threads, writes - 1)
            else:
                # A cursor is a new connection to the same database: it can still change the
                # setting when a failed statement has aborted this connection's transaction.
                with suppress(duckdb.Error), connection.cursor() as cursor:
                    cursor.execute(f"SET threads = {threads}")


# How DuckDB shows its memory limit (``current_setting('memory_limit')``): "953.6 MiB".
_BINARY_UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}


@contextmanager
def memory_limited(connection: duckdb.DuckDBPyConnection, limit_bytes: int) -> Iterator[None]:
    """Hold DuckDB's memory limit (a setting of the database instance) at ``limit_bytes`` at
    most for a moment, then restore it; a lower limit stays. Above the limit DuckDB evicts
    cached blocks and spills."""
    previous = scalar(connection, "SELECT current_setting('memory_limit')")
    number, unit = previous.split()
    if float(number) * _BINARY_UNITS[unit] <= limit_bytes:
        yield
        return
    connection.execute(f"SET memory_limit = '{limit_bytes}B'")
    try:
        yield
    finally:
        # After the transaction it guarded: an aborted one refuses SET until its ROLLBACK.
        # DuckDB's default is restored exactly: the string shown is rounded, and setting it
        # back would lower the limit a little each time.
        with suppress(duckdb.Error):
            connection.execute("RESET memory_limit")
            if scalar(connection, "SELECT current_setting('memory_limit')") != previous:
                connection.execute("SET memory_limit = $1", [previous])


# DuckDB's buffer pool while a scan streams data that is used once (the vectors a snapshot
# copies, a one-shot vector ranking): caching those blocks costs more than it saves.
SCAN_MEMORY_LIMIT = 16 << 20
# A scan filtered by a caller's SQL also works beside the vectors it streams (JSON functions
# over each chunk's metadata): 16 MB ran out with a library's filter over chunks carrying their
# pages' front matter (~180 characters of metadata), at 20k chunks as at 100k; 24 MB did not.
FILTERED_SCAN_MEMORY_LIMIT = 64 << 20


def scan_buffer_pool(
    connection: duckdb.DuckDBPyConnection, limit: int = SCAN_MEMORY_LIMIT
) -> AbstractContextManager[None]:
    """Hold DuckDB's buffer pool small (``limit``) for a scan whose blocks will not be read
    again soon."""
    return memory_limited(connection, limit)


def evict_cached_blocks(connection: duckdb.DuckDBPyConnection) -> None:
    """Let DuckDB hand back every cached block nothing uses, by lowering its limit below them
    for a moment. Only outside a transaction: DuckDB refuses the lower limit while a query pins
    more, and a refusal inside one would abort it. A refusal is let go (the cache is an
    optimisation)."""
    with suppress(duckdb.Error), memory_limited(connection, _EVICT_LIMIT):
        pass


# Below one block of a table (256 KB), so DuckDB evicts every one it can, and above the few KB a
# statement allocates, so one that runs meanwhile is not refused.
_EVICT_LIMIT = 64 << 10


def _database_key(connection: duckdb.DuckDBPyConnection) -> str:
    row = first_row(
        connection, "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    )
    path = row[0] if row else None
    return str(path) if path else f"memory:{id(connection)}"


def first_line(error: BaseException) -> str:
    """The first line of an error message (DuckDB's carry a caret diagram below it)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def column(values: Sequence[Any], dtype: str | None = None) -> np.ndarray:
    """A column for ``registered``: numbers as ``dtype`` (None becomes NULL), else objects."""
    if dtype is None:
        objects = np.empty(len(values), dtype=object)
        objects[:] = list(values)
        return objects
    missing = [value is None for value in values]
    data = np.array([0 if value is None else value for value in values], dtype=dtype)
    return np.ma.masked_array(data, mask=missing) if any(missing) else data


@contextmanager
def registered(
    connection: duckdb.DuckDBPyConnection, name: str, table: dict[str, np.ndarray]
) -> Iterator[None]:
    """Make a dict of equal-length numpy columns queryable as ``name`` for a moment.

    Inside a transaction DuckDB keeps what was registered referenced until the commit,
    unregistered or not, so the object columns are emptied once the statements have copied
    them.
    """
    connection.register(name, table)
    try:
        yield
    except BaseException:
        # In an aborted transaction unregister fails too; keep the original error visible.
        with suppress(duckdb.Error):
            connection.unregister(name)
        raise
    finally:
        for values in table.values():
            if values.dtype == object:
                values[...] = None
    connection.unregister(name)


class _ArrowBatch:
    """Columns as one Arrow record batch for DuckDB to scan (a new stream each time it asks),
    until ``release`` drops it: DuckDB keeps the registered object until the transaction ends.
    """

    def __init__(self, columns: dict[str, Sequence[Any] | np.ndarray]) -> None:
        arrays = [_arrow_array(values) for values in columns.values()]
        schema = nanoarrow.struct(
            {name: array.schema for name, array in zip(columns, arrays, strict=True)}
        )
        length = arrays[0].length if arrays else 0
        self.batch: nanoarrow.CArray | None = nanoarrow.c_array_from_buffers(
            schema, length, [None], children=arrays
        )

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        if self.batch is None:
            raise RuntimeError("the batch was scanned and released")
        return nanoarrow.c_array_stream(self.batch).__arrow_c_stream__(requested_schema)

    def release(self) -> None:
        self.batch = None


def _arrow_array(values: Sequence[Any] | np.ndarray) -> nanoarrow.CArray:
    """Strings (a list, None for NULL), numbers (a numpy array, masked for NULL), or a
    ``(rows, width)`` matrix as a fixed-size list per row."""
    if isinstance(values, np.ma.MaskedArray):
        return nanoarrow.c_array(values.tolist(), _NULLABLE_NUMBERS[values.dtype.char]())
    if isinstance(values, np.ndarray) and values.ndim == 2:
        rows, width = values.shape
        flat = nanoarrow.c_array(np.ascontiguousarray(values).reshape(-1))
        row_type = nanoarrow.fixed_size_list(flat.schema, width)
        return nanoarrow.c_array_from_buffers(row_type, rows, [None], children=[flat])
    if isinstance(values, np.ndarray) and values.dtype != object:
        return nanoarrow.c_array(np.ascontiguousarray(values))
    return nanoarrow.c_array(list(values), nanoarrow.string())


# Arrow types of the nullable number columns ``column`` makes, by numpy type character.
_NULLABLE_NUMBERS = {"i": nanoarrow.int32, "l": nanoarrow.int64, "q": nanoarrow.int64}


@contextmanager
def registered_arrow(
    connection: duckdb.DuckDBPyConnection, name: str, columns: dict[str, Sequence[Any] | np.ndarray]
) -> Iterator[None]:
    """Make columns queryable as ``name`` for a moment, as one Arrow batch (see
    ``_arrow_array`` for what a column may be); nothing of them is held afterwards.

    For bulk inserts: DuckDB scans Arrow buffers without touching Python objects, where a
    numpy column of per-row vectors (``registered``) is read object by object.
    """
    batch = _ArrowBatch(columns)
    connection.register(name, batch)
    try:
        yield
    finally:
        batch.release()
        # In an aborted transaction unregister fails too; keep the original error visible.
        with suppress(duckdb.Error):
            connection.unregister(name)


@contextmanager
def objects_typed_by_first_value(connection: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Let DuckDB type each registered object column by its first non-null value, for a moment.

    By default it samples up to 1,000 values of every object column at every scan; the columns
    ``column`` builds hold one Python type each (or None), so one value decides. Wrap a whole
    transaction in it: an aborted transaction refuses SET until its COMMIT or ROLLBACK.
    """
    previous = scalar(connection, "SELECT current_setting('pandas_analyze_sample')")
    connection.execute("SET pandas_analyze_sample = 1")
    try:
        yield
    finally:
        with suppress(duckdb.Error):  # the connection was closed meanwhile
            connection.execute(f"SET pandas_analyze_sample = {int(previous)}")


# Arrow's formats for the column types read whole: fixed-width numbers, and fixed-size lists of
# them (``FLOAT[d]``).
_ARROW_DTYPES = {
    "i": np.int32,
    "l": np.int64,
    "L": np.uint64,
    "f": np.float32,
    "g": np.float64,
    "c": np.int8,
}


def numpy_batches(relation: duckdb.DuckDBPyRelation) -> Iterator[dict[str, np.ndarray]]:
    """A query's rows in DuckDB's Arrow batches, each column a numpy view of the batch's
    buffer; ``FLOAT[d]`` columns come as ``(rows, d)`` matrices (``fetchnumpy`` would hand
    over one small array per row, all at once). The columns must be NOT NULL, and a view is
    only valid until the next batch is read: copy what is kept.
    """
    names = relation.columns
    for batch in nanoarrow.c_array_stream(relation):
        yield {name: _as_numpy(batch.child(i)) for i, name in enumerate(names)}


def _as_numpy(array: nanoarrow.CArray) -> np.ndarray:
    fixed_size = re.fullmatch(r"\+w:(\d+)", array.schema.format)
    if fixed_size is None:
        return _values(array, array.offset, array.length)
    width = int(fixed_size.group(1))
    values = _values(array.child(0), array.offset * width, array.length * width)
    return values.reshape(array.length, width)


def _values(array: nanoarrow.CArray, start: int, count: int) -> np.ndarray:
    dtype = _ARROW_DTYPES[array.schema.format]
    first = array.offset + start
    return np.frombuffer(array.view().buffer(1), dtype=dtype)[first : first + count]
