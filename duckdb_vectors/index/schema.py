"""The index's tables, created and changed only through numbered migrations applied on open.

An index file outlives the code that wrote it: each migration runs once, in order, inside
the opening transaction, and is recorded in ``schema_migrations``. A file whose schema is newer
than this code is refused instead of being misread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from ..errors import NotAnIndexError
from . import chunk_table, documents, plain_sql, postings, vector_codes
from .db import has_table, scalar


@dataclass(frozen=True)
class Migration:
    """One step of the schema.

    ``readable_without``: code at this version still reads (read-only) a file that has not had
    this step, so a frozen index need not be rewritten to be searched by a newer version.
    """

    version: int
    description: str
    apply: Callable[[duckdb.DuckDBPyConnection], None]
    readable_without: bool = False


def _initial_schema(connection: duckdb.DuckDBPyConnection) -> None:
    # ``chunks`` was made at the first write until version 3 (it needs the embedding width).
    postings.create_by_term(connection)
    connection.execute(
        "CREATE TABLE IF NOT EXISTS manifest ("
        " id INTEGER PRIMARY KEY CHECK (id = 1), document JSON NOT NULL)"
    )


def _nothing(connection: duckdb.DuckDBPyConnection) -> None:
    pass


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "postings and manifest", _initial_schema),
    Migration(2, "documents: one row per indexed file", documents.create),
    # An index never written to gets ``chunks`` empty, so every reader can count on it.
    Migration(3, "chunks exists from the start", chunk_table.create_empty, readable_without=True),
    Migration(4, "postings by term id", postings.create, readable_without=True),
    # Writers of this version keep the codes of a quantized index; older ones would not.
    Migration(5, "vector_codes: int8 codes", vector_codes.create_empty, readable_without=True),
    Migration(
        6,
        "chunks.content_digest: each chunk's part of the content hash",
        chunk_table.add_content_digest,
        readable_without=True,
    ),
    Migration(
        7,
        "word_forms, chunk_view and search_text: BM25 search from plain DuckDB",
        plain_sql.migrate,
        readable_without=True,
    ),
    # 8 added each term's MD5 to ``terms``; 9 drops them, so a file from before 8 never gets them.
    Migration(
        8, "terms.digest_high, terms.digest_low (dropped by 9)", _nothing, readable_without=True
    ),
    Migration(
        9,
        "terms without digests: terms are found by their strings",
        postings.drop_term_digests,
        readable_without=True,
    ),
    Migration(
        10,
        "documents.validators: what a document's source said of it (ETag, git blob)",
        documents.add_validators,
        readable_without=True,
    ),
    # The SDK stems queries itself: only search_text reads word_forms, and a file's own macro
    # reads the word_forms it was stored with.
    Migration(
        11,
        "word_forms.language: the word forms of each library's language",
        plain_sql.migrate_languages,
        readable_without=True,
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1].version
UPGRADE_COMMAND = "duckdb-vectors upgrade --db"  # brings a file up to this version


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
    """For read-only opens: the schema must be one this code reads, and hold an index."""
    current = applied_version(connection)
    if current == 0 or not has_table(connection, "chunks"):
        raise NotAnIndexError("it is empty (no index has been written to it)")
    missing = [m for m in MIGRATIONS if m.version > current]
    if current > SCHEMA_VERSION or not all(m.readable_without for m in missing):
        action = (
            "upgrade duckdb-vectors"
            if current > SCHEMA_VERSION
            else f"open it once read-write to migrate it ({UPGRADE_COMMAND} FILE)"
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
