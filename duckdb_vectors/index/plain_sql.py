"""An index as plain DuckDB sees it: ``chunk_view`` (the chunks) and ``search_text`` (BM25 as a
table macro), stored in the file (made by a migration, refreshed by writes) so that a frozen,
read-only index has them (docs/plain-duckdb.md). ``chunk_view``'s columns are a contract
(``view_columns``): later releases add columns at the end, never rename or drop one.

``search_text`` ranks as ``VectorStore.query_text`` does (the same postings, k1, b, idf, title
weight and order of ties) and must turn the query into the same terms in SQL: its tokens are
the one other implementation of ``tokenizer``'s rule, held equal to it by
tests/test_properties.py (and its rankings to the SDK's by tests/test_plain_sql.py). It
normalises to NFC (DuckDB has no NFKC) and does not split the scripts the tokenizer cuts into
n-grams. Having no stemmer (``fts`` would need a download), it looks each word's term up in
``word_forms`` and takes any other word as its own term, so only a query word the index never
contained can read differently.
"""

from __future__ import annotations

import json
from functools import cache

import duckdb

from ..bm25 import BM25_B, BM25_K1, bm25_idf_sql, bm25_weight_sql
from ..citations import URL_KEY
from ..filters import json_path_literal
from . import chunk_table
from .db import scalar
from .db import string_literal as _string
from .languages import Languages
from .postings import add_word_form_languages, create_word_forms
from .slices import NO_LIBRARY, library_key, library_sql
from .terms import DEFAULT_LANGUAGE, QUESTION_WORDS

VIEW = "chunk_view"
MACRO = "search_text"
DEFAULT_K = 10
# Chunks tokenized at a time when an older index's word forms are recorded.
_BATCH = 16_384


def view_columns(slice_keys: list[str]) -> str:
    """``chunk_view``'s select list over ``chunks c`` (the macro returns the same columns):

    chunk_id, source, position (the chunk's place in its source), title (the heading
    breadcrumb), url (the citation URL), slice (a JSON object of the index's slice keys and the
    chunk's values of them), text, metadata (every metadata value, as JSON).
    """
    pairs = ", ".join(
        f"{_string(key)}, json_extract_string(c.metadata, {json_path_literal(key)})"
        for key in slice_keys
    )
    slice_value = f"json_object({pairs})" if pairs else "json_object()"
    return (
        "c.chunk_id, c.source, c.position, c.title,"
        f" json_extract_string(c.metadata, {json_path_literal(URL_KEY)}) AS url,"
        f" {slice_value} AS slice, c.text, c.metadata"
    )


def _case_folded(expression: str) -> str:
    """``expression`` (lower-cased by DuckDB) case-folded as Python's ``str.casefold`` does:
    one ``translate`` for the characters folded to one character and a ``replace`` for each of
    the rest."""
    single, multiple = case_folds()
    folded = (
        f"translate({expression}, {_string(''.join(single))}, {_string(''.join(single.values()))})"
    )
    for character, replacement in multiple.items():
        folded = f"replace({folded}, {_string(character)}, {_string(replacement)})"
    return folded


@cache
def case_folds(last: int = 0xFFFF) -> tuple[dict[str, str], dict[str, str]]:
    """The lower-case characters up to ``last`` whose case folding differs (ß, final sigma,
    Cherokee, ...): those folded to one character, and the others. Every one is in the Basic
    Multilingual Plane (a test checks all of Unicode). Blocks are compared whole first; only
    the few that differ are read character by character."""
    single: dict[str, str] = {}
    multiple: dict[str, str] = {}
    for start in range(0, last + 1, _BLOCK):
        block = "".join(map(chr, range(start, min(start + _BLOCK, last + 1))))
        if block.casefold() == block.lower():
            continue
        for character in block:
            folded = character.casefold()
            if character.lower() == character and folded != character:
                (single if len(folded) == 1 else multiple)[character] = folded
    return single, multiple


_BLOCK = 4096  # code points


# The tokenizer's words (``tokenizer._TOKEN``'s): word characters joined by single joiners. RE2
# compiles that pattern (a Unicode class twice under a repetition) slowly, on every query; so the
# macro takes runs of word characters and joiners and cuts each where joiners meet and off its
# ends, which leaves the same words.
_RUN = r"[\p{L}\p{N}\p{M}_.\-']+"
_JOINER = r"[.\-']"
_JOINERS = ".-'"


def _query_words(query: str) -> str:
    """A subquery of the words (column ``word``) of ``query`` (a SQL expression) as
    ``tokenizer.tokenize`` reads them: NFC, then lower case and case folding (Python lower-cases
    İ to i and a combining dot above, DuckDB to i alone)."""
    lowered = f"lower(nfc_normalize(replace({query}, 'İ', {_string('İ'.lower())})))"
    runs = f"regexp_extract_all({_case_folded(lowered)}, {_string(_RUN)})"
    pieces = f"string_split_regex(run, {_string(_JOINER + '{2,}')})"
    return (
        f"(SELECT trim(piece, {_string(_JOINERS)}) AS word FROM (SELECT unnest({pieces}) AS piece"
        f" FROM (SELECT unnest({runs}) AS run)) WHERE trim(piece, {_string(_JOINERS)}) <> '')"
    )


def macro_statements(slice_keys: list[str], languages: Languages) -> list[str]:
    """The macros, each a ``CREATE OR REPLACE MACRO`` statement: ``search_text(query, k := 10,
    slice := NULL)``, the ``k`` best chunks by BM25 as ``chunk_view`` rows with their ``score``
    (``slice``, a struct, keeps chunks whose metadata holds those values), and its helpers
    ``search_text_tokens(query)`` and ``search_text_terms(query, slice := NULL)`` (a query
    word's forms in the languages of the libraries the slice holds chunks of: ``languages``).

    No macro has a WITH clause: DuckDB 1.4.0 cannot bind the CTEs of a macro DuckDB 2 stored.
    Parameters stand for their values wherever their names appear, so no column is named
    ``query``, ``k`` or ``slice``. Each chunk's terms are summed in one order, so that equal
    scores are equal to the last bit and tie, ordered by key as the SDK orders ties.
    """
    question_words = ", ".join(_string(word) for word in sorted(QUESTION_WORDS))
    content = f"token NOT IN ({question_words})"
    joiner = _string(_JOINER)
    idf = bm25_idf_sql("m.df", "s.documents")
    weight = bm25_weight_sql("m.tf", "c.token_count", "a.average_length", str(BM25_K1), str(BM25_B))
    tokens = f"""
CREATE OR REPLACE MACRO {MACRO}_tokens(query) AS TABLE
SELECT unnest(list_concat([word],
    CASE WHEN regexp_matches(word, {joiner}) THEN string_split_regex(word, {joiner}) ELSE [] END
)) AS token
FROM {_query_words("query")}
"""
    library = library_sql(slice_keys)
    sliced = "slice IS NULL OR json_contains(c.metadata, to_json(slice))"
    searched_languages = (
        f"SELECT DISTINCT {languages.sql(library_sql(slice_keys, 'c.metadata'))} AS language"
        f" FROM chunks c WHERE {sliced}"
        if languages.several
        else f"SELECT {_string(languages.default)} AS language"
    )
    terms = f"""
CREATE OR REPLACE MACRO {MACRO}_terms(query, slice := NULL) AS TABLE
SELECT DISTINCT coalesce(f.term, q.token) AS term
FROM (
    SELECT token FROM {MACRO}_tokens(query)
    WHERE {content} OR NOT EXISTS (SELECT 1 FROM {MACRO}_tokens(query) WHERE {content})
) q
CROSS JOIN ({searched_languages}) l
LEFT JOIN word_forms f ON f.word = q.token AND f.language = l.language
"""
    searched = (  # the libraries the slice holds chunks of: BM25's statistics are theirs
        f"SELECT {library}"
        if library == NO_LIBRARY
        else f"SELECT DISTINCT {library_sql(slice_keys, 'c.metadata')} FROM chunks c WHERE {sliced}"
    )
    search = f"""
CREATE OR REPLACE MACRO {MACRO}(query, k := {DEFAULT_K}, slice := NULL) AS TABLE
SELECT {view_columns(slice_keys)}, best.score
FROM (
    SELECT m.key, sum({idf} * {weight} ORDER BY m.term_id) AS score
    FROM (
        SELECT p.term_id, p.key, p.tf, l.library,
            sum(CAST(l.searched AS DOUBLE)) OVER (PARTITION BY p.term_id) AS df
        FROM postings p
        JOIN (
            SELECT key, {library} AS library, {library} IN ({searched}) AS searched FROM chunks
        ) l USING (key)
        WHERE term_id IN (
            SELECT t.term_id FROM terms t JOIN {MACRO}_terms(query, slice := slice) USING (term)
        )
    ) m
    JOIN chunks c USING (key)
    JOIN (
        SELECT {library} AS library, avg(token_count) AS average_length FROM chunks
        GROUP BY library
    ) a USING (library)
    CROSS JOIN (
        SELECT count(*)::DOUBLE AS documents FROM chunks WHERE {library} IN ({searched})
    ) s
    WHERE {sliced}
    GROUP BY m.key
    ORDER BY score DESC, m.key
    LIMIT k
) best
JOIN chunks c USING (key)
ORDER BY best.score DESC, c.key
"""
    return [tokens, terms, search]


def create(
    connection: duckdb.DuckDBPyConnection, slice_keys: list[str], languages: Languages
) -> None:
    """(Re)create ``chunk_view`` and the macros for an index with these slice keys and
    languages (what ``Manifest.slice_keys`` and ``Manifest.languages`` say)."""
    connection.execute(
        f"CREATE OR REPLACE VIEW {VIEW} AS SELECT {view_columns(slice_keys)} FROM chunks c"
    )
    for statement in macro_statements(slice_keys, languages):
        connection.execute(statement)


def migrate(connection: duckdb.DuckDBPyConnection) -> None:
    """Schema 7: the word forms of what the index holds, and the view and macro over it."""
    create_word_forms(connection)
    slice_keys, languages = _recorded(connection)
    language = languages.sql(library_sql(slice_keys))
    chunk_table.record_word_forms(connection, _BATCH, language)
    create(connection, slice_keys, languages)


def migrate_languages(connection: duckdb.DuckDBPyConnection) -> None:
    """Schema 11: word forms by language, and the macros that look them up so."""
    slice_keys, languages = _recorded(connection)
    add_word_form_languages(connection, languages.default)
    create(connection, slice_keys, languages)


def _recorded(connection: duckdb.DuckDBPyConnection) -> tuple[list[str], Languages]:
    """The slice keys and languages the manifest records (read as JSON: ``manifest.py`` needs
    the schema's version, so the migrations cannot import it)."""
    document = scalar(connection, "SELECT document FROM manifest WHERE id = 1")
    manifest = json.loads(document) if document else {}
    own = [
        (library_key(one["name"], one.get("version")), one.get("language"))
        for one in manifest.get("libraries", [])
    ]
    return manifest.get("slice_keys", []), Languages.of(
        manifest.get("language", DEFAULT_LANGUAGE), own
    )
