"""The index's tables, created and changed only through numbered migrations applied on open.

An index file outlives the code that wrote it: each migration runs once, in order, inside
the opening transaction, and is recorded in ``schema_migrations``. A file whose schema is newer
than this code is refused instead of being misread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from .db import scalar
from .errors import NotAnIndexError


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    apply: Callable[[duckdb.DuckDBPyConnection], None]


def _initial_schema(connection: duckdb.DuckDBPyConnection) -> None:
    # ``chunks`` itself needs the embedding width, so it is made by ``create_chunks_table``
    # at the first write; postings and the manifest exist from the start.
    connection.execute(
        "CREATE TABLE IF NOT EXISTS postings ("
        " term VARCHAR NOT NULL, key BIGINT NOT NULL, tf INTEGER NOT NULL)"
    )
    connection.execute(
        "CREATE TABLE IF NOT EXISTS manifest ("
        " id INTEGER PRIMARY KEY CHECK (id = 1), document JSON NOT NULL)"
    )


def _documents_table(connection: duckdb.DuckDBPyConnection) -> None:
    # One row per indexed file: an unchanged file (same bytes, same chunker settings) is
    # skipped without being read into chunks again.
    connection.execute(
        "CREATE TABLE IF NOT EXISTS documents ("
        " source VARCHAR PRIMARY KEY, content_hash VARCHAR NOT NULL, chunker VARCHAR NOT NULL,"
        " mime_type VARCHAR, size BIGINT, chunk_count INTEGER, indexed_at TIMESTAMPTZ)"
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "chunks, postings and manifest", _initial_schema),
    Migration(2, "documents: one row per indexed file", _documents_table),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def create_chunks_table(connection: duckdb.DuckDBPyConnection, dimension: int) -> None:
    connection.execute(
        "CREATE TABLE IF NOT EXISTS chunks ("
        " key BIGINT NOT NULL,"
        " chunk_id VARCHAR PRIMARY KEY,"
        " text VARCHAR NOT NULL,"
        " source VARCHAR,"
        " position INTEGER,"
        " title VARCHAR,"
        " metadata JSON,"
        " etag VARCHAR NOT NULL,"
        " stamped_at TIMESTAMPTZ NOT NULL,"
        " token_count INTEGER NOT NULL,"
        f" embedding FLOAT[{int(dimension)}] NOT NULL)"
    )


def embedding_dimension(connection: duckdb.DuckDBPyConnection) -> int | None:
    """The width of the ``embedding`` column, or None before the first write."""
    data_type = scalar(
        connection,
        "SELECT data_type FROM duckdb_columns() WHERE database_name = current_database()"
        " AND table_name = 'chunks' AND column_name = 'embedding'",
    )
    return int(str(data_type).rsplit("[", 1)[1].rstrip("]")) if data_type else None


def has_table(connection: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(
        scalar(
            connection,
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()"
            " AND schema_name = 'main' AND table_name = ?",
            [name],
        )
    )


def applied_version(connection: duckdb.DuckDBPyConnection) -> int:
    """The schema version of the open file: 0 for an empty file."""
    if not has_table(connection, "schema_migrations"):
        if _has_user_tables(connection):
            raise NotAnIndexError("it holds tables but no schema_migrations table")
        return 0
    version = scalar(connection, "SELECT max(version) FROM schema_migrations")
    return int(version) if version is not None else 0


def migrate(connection: duckdb.DuckDBPyConnection) -> int:
    """Apply every pending migration in one transaction; return the resulting version."""
    current = applied_version(connection)
    if current > SCHEMA_VERSION:
        raise NotAnIndexError(
            f"its schema version {current} is newer than this duckdb-vectors "
            f"(supports {SCHEMA_VERSION}); upgrade duckdb-vectors"
        )
    pending = [m for m in MIGRATIONS if m.version > current]
    if not pending:
        return current
    connection.execute("BEGIN TRANSACTION")
    try:
        connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INTEGER PRIMARY KEY, description VARCHAR NOT NULL,"
            " applied_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp)"
        )
        for migration in pending:
            migration.apply(connection)
            connection.execute(
                "INSERT INTO schema_migrations (version, description) VALUES (?, ?)",
                [migration.version, migration.description],
            )
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return SCHEMA_VERSION


def check_readable(connection: duckdb.DuckDBPyConnection) -> None:
    """For read-only opens: the schema must be exactly the one this code reads."""
    current = applied_version(connection)
    if current == 0:
        raise NotAnIndexError("it is empty (no index has been written to it)")
    if current != SCHEMA_VERSION:
        action = (
            "upgrade duckdb-vectors"
            if current > SCHEMA_VERSION
            else ("open it once read-write to migrate it")
        )
        raise NotAnIndexError(
            f"its schema version is {current}, this duckdb-vectors reads {SCHEMA_VERSION}; {action}"
        )


def _has_user_tables(connection: duckdb.DuckDBPyConnection) -> bool:
    """Whether the file holds anything of its own (tables or views): then it is not ours."""
    return bool(
        scalar(
            connection,
            "SELECT (SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database())"
            " + (SELECT count(*) FROM duckdb_views() WHERE database_name = current_database()"
            " AND NOT internal)",
        )
    )
