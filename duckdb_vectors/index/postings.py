"""The BM25 postings (tables ``terms``, ``postings``, ``word_forms``): how chunks' tokens become
rows, and the two ways they are read back (by term, in SQL; whole and in term order, for the
in-memory index).

``terms(term_id, term)`` names each distinct term once and ``postings(term_id, key, tf)`` holds
one row per chunk and term, kept mostly in term order (an integer sorts faster than a string).
A file of schema 3 (``postings(term, key, tf)``) opened read-only keeps its layout; ``Layout.of``
reads it through the same relations, so every query here is written once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import duckdb
import numpy as np

from .db import column_type, first_row, has_table, numpy_batches, registered_arrow, scalar


@dataclass(frozen=True)
class Layout:
    """The postings of one open file as two SQL relations.

    Attributes:
        terms: ``(term_id, term)``, one row per distinct term.
        postings: ``(term_id, key, tf)``, one row per chunk and term.
    """

    terms: str
    postings: str

    @classmethod
    def of(cls, connection: duckdb.DuckDBPyConnection) -> Layout:
        if has_table(connection, "terms"):
            return cls("terms", "postings")
        # Schema 3, read-only: ids numbered on the fly.
        terms = (
            "(SELECT CAST(row_number() OVER (ORDER BY term) AS INTEGER) AS term_id, term"
            " FROM (SELECT DISTINCT term FROM postings))"
        )
        return cls(
            terms, f"(SELECT t.term_id, p.key, p.tf FROM postings p JOIN {terms} t USING (term))"
        )

    def of_terms(self, terms: str) -> str:
        """``(term_id, key, tf)`` of the terms in ``terms``, a SQL list (e.g. ``$1::VARCHAR[]``).
        Filtered by id, so DuckDB reads only the row groups of those terms."""
        return (
            f"(SELECT term_id, key, tf FROM {self.postings} WHERE term_id IN"
            f" (SELECT term_id FROM {self.terms} WHERE term IN (SELECT unnest({terms}))))"
        )


# -- writing ---------------------------------------------------------------------------------


def create_by_term(connection: duckdb.DuckDBPyConnection) -> None:
    """Schema 1: one row per chunk and term, by the term itself (schema 4 moves it to ids)."""
    connection.execute(
        "CREATE TABLE IF NOT EXISTS postings ("
        " term VARCHAR NOT NULL, key BIGINT NOT NULL, tf INTEGER NOT NULL)"
    )


# The tables as schema 4 made them (older migrations made them without NOT NULL, which nothing
# relies on).
TERMS_COLUMNS = "term_id INTEGER NOT NULL, term VARCHAR NOT NULL"
POSTINGS_COLUMNS = "term_id INTEGER NOT NULL, key BIGINT NOT NULL, tf INTEGER NOT NULL"


def create(connection: duckdb.DuckDBPyConnection) -> None:
    """Schema 4: move schema 3's ``postings(term, key, tf)`` to term ids, in term order."""
    connection.execute(f"CREATE TABLE terms ({TERMS_COLUMNS})")
    connection.execute(
        "INSERT INTO terms SELECT CAST(row_number() OVER (ORDER BY term) AS INTEGER), term"
        " FROM (SELECT DISTINCT term FROM postings)"
    )
    connection.execute(f"CREATE TABLE postings_by_id ({POSTINGS_COLUMNS})")
    connection.execute(
        "INSERT INTO postings_by_id SELECT t.term_id, p.key, p.tf"
        " FROM postings p JOIN terms t USING (term) ORDER BY t.term_id, p.key"
    )
    connection.execute("DROP TABLE postings")
    connection.execute("ALTER TABLE postings_by_id RENAME TO postings")


def drop_term_digests(connection: duckdb.DuckDBPyConnection) -> None:
    """Schema 9: drop the terms' digests a file of schema 8 holds."""
    for column in ("digest_high", "digest_low"):
        connection.execute(f"ALTER TABLE terms DROP COLUMN IF EXISTS {column}")


# The most postings a ``Run`` holds back (16 bytes each: 128 MB).
RUN_LIMIT = 8 << 20
_NAMES = ("term_id", "key", "tf")


class Run:
    """Postings held back during a write into an index that was empty when it began, and
    inserted as one run in term order when it ends, so that ``compact_if_unordered`` need not
    rewrite them. It relies on what such a write relies on (``writes.plan_batch``'s
    ``known_new``): nothing else changes the index until the write ends.

    Past ``RUN_LIMIT`` postings the write is compacted after its commit anyway: what is held
    goes in as it is, and the rest batch by batch.
    """

    def __init__(self, connection: duckdb.DuckDBPyConnection) -> None:
        self.connection = connection
        self.parts: list[dict[str, np.ndarray]] = []
        self.held = 0
        self.spilled = False

    def add(self, postings: dict[str, np.ndarray]) -> None:
        if self.spilled:
            _insert(self.connection, postings)
            return
        self.parts.append(postings)
        self.held += len(postings["key"])
        if self.held > RUN_LIMIT:
            for part in self.parts:
                _insert(self.connection, part)
            self.parts, self.held, self.spilled = [], 0, True

    def flush(self) -> None:
        """Insert what is held, in (term id, key) order."""
        if not self.parts:
            return
        if len(self.parts) == 1:
            merged = self.parts[0]
        else:  # each part is in order already: a stable sort merges the runs
            merged = {name: np.concatenate([part[name] for part in self.parts]) for name in _NAMES}
            self.parts = []  # held once, not twice, while they are sorted
            order = np.argsort(_pairs(merged["term_id"], merged["key"]), kind="stable")
            for name in _NAMES:
                merged[name] = merged[name][order]
        self.parts, self.held = [], 0
        _insert(self.connection, merged)


def term_ids(connection: duckdb.DuckDBPyConnection, terms: list[str]) -> np.ndarray:
    """Each of ``terms``' id (int32, in that order); terms not seen before get the next ids,
    in term order."""
    if not terms:
        return np.empty(0, dtype=np.int32)
    batch = {"term": terms, "place": np.arange(len(terms), dtype=np.int64)}
    with registered_arrow(connection, "batch_terms", batch):
        connection.execute(
            "INSERT INTO terms (term_id, term)"
            " SELECT (SELECT coalesce(max(term_id), 0) FROM terms)"
            " + CAST(row_number() OVER (ORDER BY term) AS INTEGER), term"
            " FROM (SELECT DISTINCT term FROM batch_terms) n"
            " WHERE NOT EXISTS (SELECT 1 FROM terms t WHERE t.term = n.term)"
        )
        found = connection.execute(
            "SELECT b.place, t.term_id FROM batch_terms b JOIN terms t USING (term)"
        ).fetchnumpy()
    ids = np.empty(len(terms), dtype=np.int32)
    ids[found["place"]] = found["term_id"]
    return ids


def insert(
    connection: duckdb.DuckDBPyConnection,
    keys: np.ndarray,
    term_ids: np.ndarray,
    run: Run | None = None,
) -> None:
    """Count the postings of one (key, term id) pair per token and insert them sorted (or hand
    them to ``run``): a one-batch write then needs no compaction. numpy counts and sorts them,
    faster than DuckDB's GROUP BY over nearly one group per posting."""
    counted = _counted(term_ids, keys)
    if run is not None:
        run.add(counted)
    else:
        _insert(connection, counted)


def _insert(connection: duckdb.DuckDBPyConnection, postings: dict[str, np.ndarray]) -> None:
    # As an Arrow batch, let go after the INSERT (see ``registered_arrow``).
    if len(postings["key"]) == 0:  # chunks without a token (nanoarrow makes no empty array)
        return
    with registered_arrow(connection, "new_postings", postings):
        connection.execute("INSERT INTO postings SELECT term_id, key, tf FROM new_postings")


def _counted(term_ids: np.ndarray, keys: np.ndarray) -> dict[str, np.ndarray]:
    """One posting per distinct (term id, key) pair, its count as ``tf``, in that order."""
    if len(keys) == 0:
        empty = np.empty(0, dtype=np.int32)
        return {"term_id": empty, "key": np.empty(0, dtype=np.int64), "tf": empty}
    first_key = int(keys.min())
    pairs = _pairs(term_ids, keys - first_key)
    pairs.sort()
    starts = np.flatnonzero(np.diff(pairs, prepend=-1))
    distinct = pairs[starts]
    return {
        "term_id": (distinct >> 32).astype(np.int32),
        "key": (distinct & 0xFFFFFFFF) + first_key,
        "tf": np.diff(starts, append=len(pairs)).astype(np.int32),
    }


def _pairs(term_ids: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Each (term id, key) packed into one integer that sorts in that order: keys are row
    numbers, far below 2**32 (and a batch's, less their first, always are)."""
    return (term_ids.astype(np.int64) << 32) | keys.astype(np.int64)


# -- word forms ------------------------------------------------------------------------------
#
# ``word_forms(language, word, term)`` holds every indexed word whose term is not the word
# itself, in the language it was indexed in, so that SQL, which has no stemmer, can turn a
# query's words into terms (``plain_sql``). A word's term depends only on its language, so a
# row stays right after its chunks are gone.

WORD_FORMS_COLUMNS = "language VARCHAR NOT NULL, word VARCHAR NOT NULL, term VARCHAR NOT NULL"


def create_word_forms(connection: duckdb.DuckDBPyConnection) -> None:
    connection.execute(f"CREATE TABLE IF NOT EXISTS word_forms ({WORD_FORMS_COLUMNS})")


def add_word_form_languages(connection: duckdb.DuckDBPyConnection, language: str) -> None:
    """Schema 11: the ``word_forms(word, term)`` of schema 7 to 10, each row of ``language``
    (the index's one language then)."""
    if column_type(connection, "word_forms", "language") is not None:
        return  # made by this release's migration 7
    connection.execute(f"CREATE TABLE word_forms_by_language ({WORD_FORMS_COLUMNS})")
    connection.execute(
        "INSERT INTO word_forms_by_language SELECT $1, word, term FROM word_forms", [language]
    )
    connection.execute("DROP TABLE word_forms")
    connection.execute("ALTER TABLE word_forms_by_language RENAME TO word_forms")


def insert_word_forms(
    connection: duckdb.DuckDBPyConnection, language: str, forms: list[tuple[str, str]]
) -> None:
    """Record ``(word, term)`` pairs of ``language``, each word once."""
    if not forms:
        return
    words, word_terms = zip(*forms, strict=True)
    with registered_arrow(connection, "new_word_forms", {"word": words, "term": word_terms}):
        connection.execute(
            "INSERT INTO word_forms SELECT $1, word, term FROM new_word_forms n"
            " WHERE NOT EXISTS"
            " (SELECT 1 FROM word_forms f WHERE f.language = $1 AND f.word = n.word)",
            [language],
        )


def delete_keys(connection: duckdb.DuckDBPyConnection, keys: list[int]) -> None:
    connection.execute("DELETE FROM postings WHERE key IN (SELECT unnest($1::BIGINT[]))", [keys])


def clear(connection: duckdb.DuckDBPyConnection) -> None:
    connection.execute("DELETE FROM postings")
    connection.execute("DELETE FROM terms")
    connection.execute("DELETE FROM word_forms")


def compact_if_unordered(connection: duckdb.DuckDBPyConnection) -> None:
    """Rewrite the postings in term order when more than half of them came after the first
    one out of order (rows appended since the last rewrite), and drop terms no chunk has any
    more. The in-memory index reads them in storage order and sorts each batch out of order:
    half bounds that work, and the cost of rewriting."""
    total, unordered = first_row(
        connection,
        "SELECT count(*), count(*) - coalesce(min(n) FILTER (WHERE term_id < previous) - 1,"
        " count(*)) FROM (SELECT term_id, lag(term_id) OVER () AS previous,"
        " row_number() OVER () AS n FROM postings)",
    ) or (0, 0)
    if unordered * 2 <= total:
        return
    connection.execute(f"CREATE TABLE postings_in_order ({POSTINGS_COLUMNS})")
    connection.execute("INSERT INTO postings_in_order FROM postings ORDER BY term_id, key")
    connection.execute("DROP TABLE postings")
    connection.execute("ALTER TABLE postings_in_order RENAME TO postings")
    connection.execute("DELETE FROM terms WHERE term_id NOT IN (SELECT term_id FROM postings)")


# -- reading whole ---------------------------------------------------------------------------


def document_frequencies(connection: duckdb.DuckDBPyConnection, layout: Layout) -> np.ndarray:
    """Each term's number of postings, by term id (0 to the largest), counted by numpy over a
    scan of the ids."""
    size = int(scalar(connection, f"SELECT coalesce(max(term_id), -1) FROM {layout.terms}")) + 1
    counts = np.zeros(size, dtype=np.int64)
    for batch in numpy_batches(connection.sql(f"SELECT term_id FROM {layout.postings}")):
        ids = batch["term_id"]
        if len(ids):
            first = int(ids.min())
            found = np.bincount(ids - first)
            counts[first : first + len(found)] += found
    return counts


def term_ids_with_postings(
    connection: duckdb.DuckDBPyConnection, layout: Layout, document_frequency: np.ndarray
) -> dict[str, int]:
    """Each term's id, for the terms with postings (``document_frequencies``)."""
    terms = connection.sql(f"SELECT term, term_id FROM {layout.terms}").fetchnumpy()
    ids = np.asarray(terms["term_id"], dtype=np.int64)
    kept = document_frequency[ids] > 0
    return dict(zip(terms["term"][kept].tolist(), ids[kept].tolist(), strict=True))


def in_storage_order(
    connection: duckdb.DuckDBPyConnection, layout: Layout
) -> Iterator[dict[str, np.ndarray]]:
    """Every posting's ``term_id``, ``key`` and ``tf`` as stored (mostly in term order: see
    ``compact_if_unordered``), in batches (views: see ``numpy_batches``)."""
    yield from numpy_batches(connection.sql(f"SELECT term_id, key, tf FROM {layout.postings}"))
