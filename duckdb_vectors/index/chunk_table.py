"""The ``chunks`` table: its columns, its DDL, the one encoder (chunks to rows) and decoder
(rows to chunks), and the statements that read and change it.

Adding a column means one ``Column`` here, its value in ``encode``, a migration in ``schema``,
and, if callers should see it, the field of the same name on ``models.Chunk``.
"""

from __future__ import annotations

import hashlib
import json
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb
import numpy as np

from ..models import Chunk
from ..rows import ChunkColumns
from . import postings, vector_codes
from .db import (
    array_width,
    column,
    column_type,
    first_row,
    numpy_batches,
    registered,
    registered_arrow,
    scalar,
    string_literal,
)
from .terms import DEFAULT_LANGUAGE, index_words, word_forms


@dataclass(frozen=True)
class Column:
    """One column of ``chunks``, read back into the ``Chunk`` field of the same name.

    ``sql_type`` may hold ``{dimension}`` (the embedding width). ``outside_etag``: the etag (a
    hash of title and text) does not cover it, so it is rewritten for a chunk whose etag is
    unchanged and is part of the content hash. ``read_as``: the SQL it is read back with, if
    not its name. ``derived``: computed here, never read into a ``Chunk`` nor offered to a
    user's ``where``.
    """

    name: str
    sql_type: str
    constraint: str = ""
    outside_etag: bool = False
    read_as: str | None = None
    derived: bool = False

    def definition(self, dimension: int) -> str:
        return f"{self.name} {self.sql_type.format(dimension=int(dimension))} {self.constraint}"


# In table order. Empty metadata reads back as NULL (no json.loads per hit); a timestamp as
# epoch microseconds, a plain integer column for numpy.
COLUMNS: tuple[Column, ...] = (
    Column("key", "BIGINT", "NOT NULL"),
    Column("chunk_id", "VARCHAR", "PRIMARY KEY"),
    Column("text", "VARCHAR", "NOT NULL"),
    Column("source", "VARCHAR", outside_etag=True),
    Column("position", "INTEGER", outside_etag=True),
    Column("title", "VARCHAR"),
    Column(
        "metadata", "JSON", outside_etag=True, read_as="nullif(CAST(metadata AS VARCHAR), '{}')"
    ),
    Column("etag", "VARCHAR", "NOT NULL"),
    Column("stamped_at", "TIMESTAMPTZ", "NOT NULL", read_as="epoch_us(stamped_at)"),
    Column("token_count", "INTEGER", "NOT NULL"),
    Column("embedding", "FLOAT[{dimension}]", "NOT NULL"),
    # The chunk's part of the content hash (``content_statistics``).
    Column("content_digest", "UHUGEINT", "NOT NULL", derived=True),
)
_BY_NAME = {column.name: column for column in COLUMNS}
# The columns a ``Chunk`` is read back from (its embedding only when asked for).
CHUNK_FIELDS: tuple[str, ...] = tuple(
    name for name in _BY_NAME if name in Chunk.model_fields and name != "embedding"
)
# ``CHUNK_FIELDS`` as a select list whose rows ``decode`` takes.
CHUNK_SELECT = ", ".join(
    f"{_BY_NAME[name].read_as} AS {name}" if _BY_NAME[name].read_as else name
    for name in CHUNK_FIELDS
)
# Columns a user's ``where`` or ``rescore`` fragment may name, typed for checking it unbound.
SCOPE_COLUMNS: tuple[Column, ...] = tuple(
    c for c in COLUMNS if c.name != "embedding" and not c.derived
)


def create_empty(connection: duckdb.DuckDBPyConnection) -> None:
    """The table as a new index has it: every column but the embedding, whose width the first
    write decides (see ``ensure_embedding``)."""
    columns = ", ".join(c.definition(0) for c in COLUMNS if c.name != "embedding")
    connection.execute(f"CREATE TABLE IF NOT EXISTS chunks ({columns})")


def ensure_embedding(connection: duckdb.DuckDBPyConnection, dimension: int) -> None:
    """Give a table that has no embedding column yet (so no rows) one of ``dimension``."""
    if embedding_dimension(connection) is None:
        columns = ", ".join(c.definition(dimension) for c in COLUMNS)
        connection.execute(f"CREATE OR REPLACE TABLE chunks ({columns})")


def embedding_dimension(connection: duckdb.DuckDBPyConnection) -> int | None:
    """The width of the ``embedding`` column, or None before the first write."""
    return array_width(connection, "chunks", "embedding")


# -- encoding and decoding -------------------------------------------------------------------


def encode(
    chunks: ChunkColumns,
    keys: np.ndarray,
    etags: list[str],
    embeddings: np.ndarray,
    languages: Sequence[str],
) -> NewRows:
    """The rows of new chunks, column by column, and their tokens (each chunk's words in its
    language, ``languages``), for ``insert`` (``stamped_at`` is set there)."""
    tokens = tokenized(chunks.title, chunks.text, languages)
    columns = {
        "key": keys,
        **{name: _written(name, values) for name, values in chunks.columns.items()},
        "etag": etags,
        "token_count": tokens.counts,
        "embedding": np.asarray(embeddings, dtype=np.float32),
    }
    return NewRows(columns, tokens)


# The numpy type a write hands DuckDB an integer column as (None for NULL: a masked array).
_NUMBERS = {"INTEGER": "int32"}


def _written(name: str, values: list[Any]) -> Sequence[Any] | np.ndarray:
    """A write's column as ``insert`` registers it: numbers as numpy, text as it is."""
    dtype = _NUMBERS.get(_BY_NAME[name].sql_type)
    return values if dtype is None else column(values, dtype)


@dataclass(frozen=True)
class TokenColumns:
    """The BM25 terms of chunks of one language, worked out once per distinct word: each
    chunk's word count (``counts``), every chunk's words (``terms.index_words``) one after the
    other as places in ``words`` (``word_numbers``), the distinct words in the order first
    seen, and each one's term in ``language`` (``terms.word_forms``)."""

    counts: np.ndarray
    word_numbers: np.ndarray
    words: list[str]
    terms: list[str]
    language: str

    @property
    def word_forms(self) -> list[tuple[str, str]]:
        """The words whose term differs from the word, with that term (see
        ``postings.insert_word_forms``)."""
        return [
            (word, term) for word, term in zip(self.words, self.terms, strict=True) if word != term
        ]


@dataclass(frozen=True)
class Tokens:
    """A batch's BM25 terms: each chunk's word count, and the ``TokenColumns`` of the chunks of
    each language (``groups``: their positions in the batch, and their tokens)."""

    counts: np.ndarray
    groups: list[tuple[np.ndarray, TokenColumns]]


@dataclass(frozen=True)
class NewRows:
    """What ``encode`` makes of new chunks: the table's columns (all but those ``insert``
    sets), and their tokens for the postings."""

    columns: dict[str, Sequence[Any] | np.ndarray]
    tokens: Tokens


def tokenized(
    titles: Sequence[str | None], texts: Sequence[str], languages: Sequence[str]
) -> Tokens:
    """The tokens of chunks, each in its language (``languages``, one per chunk)."""
    if len(set(languages)) <= 1:  # the chunks of an index of one language
        columns = token_columns(titles, texts, languages[0] if languages else DEFAULT_LANGUAGE)
        return Tokens(columns.counts, [(np.arange(len(texts)), columns)])
    rows: dict[str, list[int]] = {}
    for row, language in enumerate(languages):
        rows.setdefault(language, []).append(row)
    counts = np.empty(len(texts), dtype=np.int32)
    groups = []
    for language, chosen in rows.items():
        positions = np.asarray(chosen, dtype=np.int64)
        columns = token_columns([titles[i] for i in chosen], [texts[i] for i in chosen], language)
        counts[positions] = columns.counts
        groups.append((positions, columns))
    return Tokens(counts, groups)


def token_columns(
    titles: Sequence[str | None], texts: Sequence[str], language: str
) -> TokenColumns:
    numbering = _Numbering()
    counts = np.empty(len(texts), dtype=np.int32)
    numbers = array("i")
    for row, (title, text) in enumerate(zip(titles, texts, strict=True)):
        words = index_words(title, text)
        counts[row] = len(words)
        numbers.extend(map(numbering.__getitem__, words))
    words = list(numbering)
    return TokenColumns(
        counts, np.frombuffer(numbers, dtype=np.int32), words, word_forms(words, language), language
    )


class _Numbering(dict[str, int]):
    """Each distinct word's number: how many distinct words came before it."""

    def __missing__(self, word: str) -> int:
        self[word] = number = len(self)
        return number


def decode(values: Sequence[Any], embedding: Any = None) -> Chunk:
    """A ``Chunk`` from a row read with ``CHUNK_SELECT`` (its values in that order), and its
    embedding if read."""
    # Unpacked by name: a field added to ``Chunk`` fails here at once.
    chunk_id, text, source, position, title, metadata, etag, stamped_at = values
    return Chunk(
        chunk_id=chunk_id,
        text=text,
        source=source,
        position=position,
        title=title,
        metadata=json.loads(metadata) if metadata else {},
        etag=etag,
        stamped_at=datetime.fromtimestamp(stamped_at / 1e6, UTC),
        embedding=embedding,
    )


def _decode_rows(rows: list[tuple[Any, ...]]) -> list[Chunk]:
    """Rows of ``CHUNK_SELECT`` followed by an embedding (or NULL) column."""
    return [decode(row[:-1], row[-1]) for row in rows]


# -- writing ---------------------------------------------------------------------------------


def insert(
    connection: duckdb.DuckDBPyConnection,
    rows: NewRows,
    stamp: datetime,
    run: postings.Run | None = None,
) -> None:
    """Insert rows made by ``encode``, and their postings (or hand those to ``run``)."""
    names = ", ".join(c.name for c in COLUMNS)
    written_as = {"stamped_at": "$1", "content_digest": _content_digest()}
    selected = ", ".join(written_as.get(c.name, c.name) for c in COLUMNS)
    with registered_arrow(connection, "new_chunks", rows.columns):
        connection.execute(
            f"INSERT INTO chunks ({names}) SELECT {selected} FROM new_chunks", [stamp]
        )
    _insert_postings(connection, np.asarray(rows.columns["key"]), rows.tokens, run)


def _insert_postings(
    connection: duckdb.DuckDBPyConnection,
    keys: np.ndarray,
    tokens: Tokens,
    run: postings.Run | None = None,
) -> None:
    for positions, columns in tokens.groups:
        group_keys = keys if len(positions) == len(keys) else keys[positions]
        term_ids = postings.term_ids(connection, columns.terms)
        postings.insert(
            connection, np.repeat(group_keys, columns.counts), term_ids[columns.word_numbers], run
        )
        postings.insert_word_forms(connection, columns.language, columns.word_forms)


def retokenize(connection: duckdb.DuckDBPyConnection, batch_size: int, language: str) -> None:
    """Recount every chunk's tokens and rebuild the postings and word forms with this
    tokenizer, each chunk's words in its language (``language``: a SQL expression of it,
    ``Languages.sql``), reading ``batch_size`` chunks at a time (memory stays bounded). The
    caller owns the transaction."""
    postings.clear(connection)
    for keys, titles, texts, languages in _texts_in_key_order(connection, batch_size, language):
        tokens = tokenized(titles, texts, languages)
        with registered(connection, "retokenized", {"key": keys, "token_count": tokens.counts}):
            connection.execute(
                "UPDATE chunks SET token_count = r.token_count FROM retokenized r"
                " WHERE chunks.key = r.key"
            )
        _insert_postings(connection, keys, tokens)


def retokenize_where(
    connection: duckdb.DuckDBPyConnection,
    batch_size: int,
    language: str,
    condition: str,
    parameters: list[Any],
) -> int:
    """Rebuild the postings of the chunks that match ``condition`` (SQL over their columns,
    its parameters numbered from ``$3``) with their words in ``language`` (a Snowball name),
    ``batch_size`` at a time; return how many. Their token counts do not depend on the
    language. The caller owns the transaction."""
    count = 0
    texts = _texts_in_key_order(
        connection, batch_size, string_literal(language), condition, parameters
    )
    for keys, titles, chunk_texts, languages in texts:
        postings.delete_keys(connection, keys.tolist())
        _insert_postings(connection, keys, tokenized(titles, chunk_texts, languages))
        count += len(keys)
    return count


def record_word_forms(
    connection: duckdb.DuckDBPyConnection, batch_size: int, language: str
) -> None:
    """Record the word forms of every chunk's words (an index written before they were kept),
    in its language (``language``: a SQL expression of it)."""
    for _, titles, texts, languages in _texts_in_key_order(connection, batch_size, language):
        for _, columns in tokenized(titles, texts, languages).groups:
            postings.insert_word_forms(connection, columns.language, columns.word_forms)


def _texts_in_key_order(
    connection: duckdb.DuckDBPyConnection,
    batch_size: int,
    language: str,
    condition: str = "true",
    parameters: Sequence[Any] = (),
) -> Iterator[tuple[np.ndarray, list[str | None], list[str], list[str]]]:
    """The key, title, text and language (``language``, a SQL expression of it) of every chunk
    that matches ``condition``, ``batch_size`` chunks at a time, in key order."""
    after = -1
    while True:
        batch = connection.execute(
            f"SELECT key, title, text, {language} FROM chunks"
            f" WHERE key > $1 AND ({condition}) ORDER BY key LIMIT $2",
            [after, batch_size, *parameters],
        ).fetchall()
        if not batch:
            return
        keys = np.asarray([row[0] for row in batch], dtype=np.int64)
        yield keys, [row[1] for row in batch], [row[2] for row in batch], [row[3] for row in batch]
        after = int(keys[-1])


def restamp_unchanged(
    connection: duckdb.DuckDBPyConnection, chunks: ChunkColumns, stamp: datetime
) -> None:
    """Rewrite what the etag does not cover, and the stamp, of chunks whose etag is unchanged."""
    outside_etag = [c for c in COLUMNS if c.outside_etag]
    updates = {
        c.name: column(chunks.columns[c.name], _NUMBERS.get(c.sql_type))
        for c in [_BY_NAME["chunk_id"], *outside_etag]
    }
    assignments = ", ".join(f"{c.name} = CAST(u.{c.name} AS {c.sql_type})" for c in outside_etag)
    assignments += f", content_digest = {_content_digest(own='chunks.', changed='u.')}"
    with registered(connection, "unchanged_chunks", updates):
        connection.execute(
            f"UPDATE chunks SET {assignments}, stamped_at = $1"
            " FROM unchanged_chunks u WHERE chunks.chunk_id = u.chunk_id",
            [stamp],
        )


def restamp_sources(
    connection: duckdb.DuckDBPyConnection, sources: Sequence[str], stamp: datetime
) -> None:
    connection.execute(
        "UPDATE chunks SET stamped_at = $1 WHERE source IN (SELECT unnest($2::VARCHAR[]))",
        [stamp, list(sources)],
    )


def delete_keys(connection: duckdb.DuckDBPyConnection, keys: np.ndarray) -> None:
    """Delete chunks, their postings and their int8 codes by row key."""
    if len(keys) == 0:
        return
    key_list = [int(key) for key in keys]
    postings.delete_keys(connection, key_list)
    vector_codes.delete_keys(connection, key_list)
    connection.execute("DELETE FROM chunks WHERE key IN (SELECT unnest($1::BIGINT[]))", [key_list])


def next_key(connection: duckdb.DuckDBPyConnection) -> int:
    return int(scalar(connection, "SELECT coalesce(max(key), 0) + 1 FROM chunks"))


# -- reading ---------------------------------------------------------------------------------


def count(connection: duckdb.DuckDBPyConnection) -> int:
    return int(scalar(connection, "SELECT count(*) FROM chunks"))


def sources(connection: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Each source ('' for chunks without one) and its number of chunks."""
    found = connection.execute(
        "SELECT coalesce(source, ''), count(*) FROM chunks GROUP BY 1 ORDER BY 1"
    ).fetchall()
    return dict(found)


def keys_where(condition: str) -> str:
    """The statement reading the keys of the chunks matching ``condition``, ascending (a
    caller's SQL condition is run by the caller, as such)."""
    return f"SELECT key FROM chunks WHERE {condition} ORDER BY key"


def keys_of(connection: duckdb.DuckDBPyConnection, chunk_ids: Sequence[str]) -> np.ndarray:
    return connection.execute(
        keys_where("chunk_id IN (SELECT unnest($1::VARCHAR[]))"), [list(chunk_ids)]
    ).fetchnumpy()["key"]


def stale_keys(
    connection: duckdb.DuckDBPyConnection, source_prefix: str, before: datetime
) -> np.ndarray:
    """Keys of chunks under ``source_prefix`` last written or confirmed before ``before``."""
    return connection.execute(
        keys_where("source IS NOT NULL AND starts_with(source, $1) AND stamped_at < $2"),
        [source_prefix, before],
    ).fetchnumpy()["key"]


def libraries(connection: duckdb.DuckDBPyConnection, library: str) -> list[str]:
    """The libraries of the chunks (``library``, a SQL expression of a chunk's), in the order
    ``lengths`` numbers them."""
    return [
        name
        for (name,) in connection.sql(
            f"SELECT DISTINCT {library} FROM chunks ORDER BY 1"
        ).fetchall()
    ]


def lengths(connection: duckdb.DuckDBPyConnection, library: str) -> dict[str, np.ndarray]:
    """Every chunk's ``key``, ``token_count`` and ``library``, by key: the number (0, 1 ...,
    in the order of their names) of its library, ``library`` a SQL expression over its columns
    (``slices.library_sql``). DuckDB numbers them: numpy sorts strings far slower."""
    return connection.sql(
        "SELECT key, token_count,"
        f" CAST(dense_rank() OVER (ORDER BY {library}) - 1 AS INTEGER) AS library"
        " FROM chunks ORDER BY key"
    ).fetchnumpy()


def text_bytes(connection: duckdb.DuckDBPyConnection) -> int:
    """The bytes of all the chunks' texts."""
    return int(scalar(connection, "SELECT sum(strlen(text)) FROM chunks") or 0)


def embeddings(
    connection: duckdb.DuckDBPyConnection, keys: np.ndarray, dimension: int
) -> np.ndarray:
    """The stored float32 vectors of these chunk keys (each must exist), in that order."""
    found = np.empty((len(keys), dimension), dtype=np.float32)
    if len(keys) == 0:
        return found
    wanted = {"key": np.asarray(keys, dtype=np.int64), "place": np.arange(len(keys))}
    with registered(connection, "wanted_keys", wanted):
        relation = connection.sql(
            "SELECT w.place, c.embedding FROM chunks c JOIN wanted_keys w USING (key)"
        )
        for batch in numpy_batches(relation):
            found[batch["place"]] = batch["embedding"]
    return found


def first_where(
    connection: duckdb.DuckDBPyConnection, values: list[str], condition: str, parameters: list[Any]
) -> tuple[Any, ...] | None:
    """The source and ``values`` (SQL expressions) of the first chunk matching ``condition``."""
    return first_row(
        connection,
        f"SELECT source, {', '.join(values)} FROM chunks WHERE {condition} ORDER BY key LIMIT 1",
        parameters,
    )


def count_by(
    connection: duckdb.DuckDBPyConnection, values: list[str], condition: str
) -> list[tuple[Any, ...]]:
    """Each combination of ``values`` (SQL expressions) among the chunks matching
    ``condition``, with its number of chunks, in order."""
    return connection.execute(
        f"SELECT {', '.join(values)}, count(*) FROM chunks WHERE {condition}"
        " GROUP BY ALL ORDER BY ALL"
    ).fetchall()


def etags_of(connection: duckdb.DuckDBPyConnection, chunk_ids: list[str]) -> dict[str, str]:
    found = connection.execute(
        "SELECT chunk_id, etag FROM chunks WHERE chunk_id IN (SELECT unnest($1::VARCHAR[]))",
        [chunk_ids],
    ).fetchall()
    return dict(found)


def embeddings_by_etag(
    connection: duckdb.DuckDBPyConnection, etags: list[str]
) -> dict[str, np.ndarray]:
    """A stored vector for each of ``etags`` the index holds (any chunk with that etag)."""
    if embedding_dimension(connection) is None:
        return {}
    # fetchnumpy: each vector arrives as a float32 array, not a list of Python floats.
    found = connection.execute(
        "SELECT DISTINCT ON (etag) etag, embedding FROM chunks"
        " WHERE etag IN (SELECT unnest($1::VARCHAR[]))",
        [list(set(etags))],
    ).fetchnumpy()
    return dict(zip(found["etag"].tolist(), found["embedding"], strict=True))


def by_keys(connection: duckdb.DuckDBPyConnection, keys: np.ndarray) -> list[Chunk]:
    """The chunks with these row keys, in that order (every key must exist)."""
    if len(keys) == 0:
        return []
    found = connection.execute(
        f"SELECT key, {CHUNK_SELECT}, NULL FROM chunks WHERE key IN (SELECT unnest($1::BIGINT[]))",
        [keys.tolist()],
    ).fetchall()
    by_key = {row[0]: row[1:] for row in found}
    return _decode_rows([by_key[int(key)] for key in keys])


def columns_between(connection: duckdb.DuckDBPyConnection, low: int, high: int) -> dict[str, Any]:
    """The ``CHUNK_SELECT`` columns of the chunks with keys ``low`` to ``high``, in key order,
    as ``fetchnumpy`` gives them."""
    return connection.execute(
        f"SELECT {CHUNK_SELECT} FROM chunks WHERE key BETWEEN $1 AND $2 ORDER BY key", [low, high]
    ).fetchnumpy()


# A chunk's document: its source, else the chunk alone (``document_of`` in Python).
DOCUMENT_OF = "coalesce(source, '#' || chunk_id)"


def documents_of(connection: duckdb.DuckDBPyConnection, keys: np.ndarray) -> list[str]:
    """The document of each chunk with these row keys, in that order: its source, else ``#``
    and its chunk id (every key must exist)."""
    found = connection.execute(
        f"SELECT key, {DOCUMENT_OF} FROM chunks WHERE key IN (SELECT unnest($1::BIGINT[]))",
        [keys.tolist()],
    ).fetchall()
    by_key = dict(found)
    return [by_key[int(key)] for key in keys]


def document_of(source: str | None, chunk_id: str) -> str:
    """A chunk's document, as ``DOCUMENT_OF`` computes it in SQL."""
    return source if source is not None else f"#{chunk_id}"


def by_ids(
    connection: duckdb.DuckDBPyConnection, chunk_ids: Sequence[str], with_embedding: bool
) -> list[Chunk]:
    """The chunks with these ids, in the order asked; ids not in the index are left out."""
    found = connection.execute(
        f"SELECT {CHUNK_SELECT}, {_embedding_column(connection, with_embedding)} FROM chunks"
        " WHERE chunk_id IN (SELECT unnest($1::VARCHAR[]))",
        [list(chunk_ids)],
    ).fetchall()
    by_id = {chunk.chunk_id: chunk for chunk in _decode_rows(found)}
    return [by_id[chunk_id] for chunk_id in dict.fromkeys(chunk_ids) if chunk_id in by_id]


def page(
    connection: duckdb.DuckDBPyConnection, after: str | None, limit: int, with_embedding: bool
) -> tuple[list[Chunk], bool]:
    """Up to ``limit`` chunks in id order after ``after``, and whether more follow."""
    found = connection.execute(
        f"SELECT {CHUNK_SELECT}, {_embedding_column(connection, with_embedding)} FROM chunks"
        " WHERE $1::VARCHAR IS NULL OR chunk_id > $1 ORDER BY chunk_id LIMIT $2",
        [after, limit + 1],
    ).fetchall()
    return _decode_rows(found[:limit]), len(found) > limit


def by_source(
    connection: duckdb.DuckDBPyConnection,
    source: str,
    positions: tuple[int, int] | None = None,
) -> list[Chunk]:
    """The chunks of one source in position order; ``positions``: only those from the first
    to the last given, inclusive."""
    low, high = positions if positions is not None else (None, None)
    found = connection.execute(
        f"SELECT {CHUNK_SELECT}, NULL FROM chunks WHERE source = $1"
        " AND ($2::INTEGER IS NULL OR position BETWEEN $2 AND $3)"
        " ORDER BY position NULLS LAST, chunk_id",
        [source, low, high],
    ).fetchall()
    return _decode_rows(found)


def content_statistics(connection: duckdb.DuckDBPyConnection) -> tuple[int, str]:
    """The chunk count and a content hash that depends only on what the chunks hold: ids,
    etags, and what the etags do not cover (not write times, so indexing the same documents
    twice gives the same hash). The stored digests are combined with XOR: no order needed, and
    no two rows cancel out, as chunk ids are unique.
    """
    row = first_row(connection, "SELECT count(*), bit_xor(content_digest) FROM chunks")
    count, combined = (int(row[0]), row[1]) if row else (0, None)
    if not count:
        return 0, ""
    return count, hashlib.sha256(f"{count}:{combined}".encode()).hexdigest()


def add_content_digest(connection: duckdb.DuckDBPyConnection) -> None:
    """Schema 6: give the table its ``content_digest`` column, filled in."""
    if column_type(connection, "chunks", "content_digest"):
        return
    # Every ALTER before the UPDATE: DuckDB cannot rebuild the primary key's index for an ALTER
    # while the transaction holds updates ("Cannot create index with outstanding updates").
    connection.execute("ALTER TABLE chunks ADD COLUMN content_digest UHUGEINT NOT NULL DEFAULT 0")
    connection.execute("ALTER TABLE chunks ALTER COLUMN content_digest DROP DEFAULT")
    connection.execute(f"UPDATE chunks SET content_digest = {_content_digest()}")


def _content_digest(own: str = "", changed: str = "") -> str:
    """SQL for a chunk's ``content_digest``: the md5 of ``{own}chunk_id``, ``{own}etag`` and
    ``{changed}<column>`` of each column outside the etag, each cast to its type first so that
    a row about to be written hashes as it will read back."""
    parts = ", ".join(
        f"coalesce(CAST(CAST({changed}{c.name} AS {c.sql_type}) AS VARCHAR), '')"
        for c in COLUMNS
        if c.outside_etag
    )
    return f"md5_number(concat_ws(chr(31), {own}chunk_id, {own}etag, {parts}))"


def _embedding_column(connection: duckdb.DuckDBPyConnection, wanted: bool) -> str:
    return "embedding" if wanted and embedding_dimension(connection) is not None else "NULL"
