"""Property-based tests (hypothesis): the filter compiler against a reference evaluator run on
real JSON metadata in DuckDB, the chunkers' no-loss and size guarantees, fusion, top-k
selection, and the tokenizer against its SQL twin (the ``search_text`` macro) and exact-v1."""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from html import unescape
from typing import Any

import duckdb
import exact_v1_tokenizer
import numpy as np
import pyromark
import pytest
import regex
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from duckdb_vectors import InvalidFilterError, VectorStore
from duckdb_vectors.chunkers import (
    HtmlChunker,
    MarkdownChunker,
    NotebookChunker,
    RstChunker,
    SkipFile,
    TextChunker,
)
from duckdb_vectors.chunkers.markdown import split_front_matter
from duckdb_vectors.config import FusionSettings
from duckdb_vectors.filters import compile_filter
from duckdb_vectors.index.languages import Languages
from duckdb_vectors.index.plain_sql import macro_statements
from duckdb_vectors.index.terms import index_terms, parse_query
from duckdb_vectors.search.memory_index import best_with_ties
from duckdb_vectors.search.ranking import TIE_TOLERANCE, Ranking, fuse
from duckdb_vectors.tokenizer import tokenize

# No example database: every run is the same fresh search, and nothing is written to disk.
# The @example cases are failures found before; they run first and fail fast.
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# -- the filter compiler -----------------------------------------------------------------------

FIELDS = ["genre", "year", "tags", "ok", "a.b", "weird'key\"", "ключ"]
OPERATORS = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists"]
MISSING = object()

# Numbers a JSON document and a DOUBLE both hold exactly (|n| <= 2**53), so Python's
# comparison and DuckDB's are comparisons of the same values.
safe_ints = st.integers(min_value=-(2**53), max_value=2**53)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
short_strings = st.sampled_from(
    ["drama", "comedy", "", "2020", "true", "a", "Drama", "ü"]
) | st.text(st.characters(exclude_categories=("Cs",)), max_size=6)
numbers = safe_ints | finite_floats | st.sampled_from([0, 1, 2020, 2020.0, -0.0, 0.5])
scalars = st.booleans() | numbers | short_strings
metadata_values = scalars | st.lists(short_strings, max_size=4) | st.lists(scalars, max_size=4)
metadata_dicts = st.dictionaries(st.sampled_from(FIELDS), metadata_values, max_size=len(FIELDS))


def _leaf_filters() -> st.SearchStrategy[Any]:
    comparison = st.sampled_from(["$gt", "$gte", "$lt", "$lte"])
    value_list = st.lists(scalars, min_size=1, max_size=4)
    operator_pairs = st.one_of(
        st.tuples(st.sampled_from(["$eq", "$ne"]), scalars),
        st.tuples(comparison, numbers),  # JSON has no infinity; the compiler refuses it
        st.tuples(st.sampled_from(["$in", "$nin"]), value_list),
        st.tuples(st.just("$exists"), st.booleans()),
    )
    return scalars | st.lists(operator_pairs, min_size=1, max_size=3).map(dict)


field_filters = st.builds(
    lambda field, condition: {field: condition}, st.sampled_from(FIELDS), _leaf_filters()
)


def _combine(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.tuples(st.sampled_from(["$and", "$or"]), st.lists(children, min_size=1, max_size=3)).map(
            lambda pair: {pair[0]: pair[1]}
        ),
        st.lists(children, min_size=2, max_size=3).map(_merge),
    )


def _merge(filters: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for item in filters:
        merged.update(item)
    return merged


valid_filters = st.recursive(field_filters, _combine, max_leaves=8)


def _scalar_equals(element: Any, value: Any) -> bool:
    if isinstance(value, bool):
        return isinstance(element, bool) and element == value
    if isinstance(value, (int, float)):
        return _is_number(element) and float(element) == float(value)
    return isinstance(element, str) and element == value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _elements(value: Any) -> list[Any]:
    if value is MISSING:
        return []
    return value if isinstance(value, list) else [value]


def _reference_operator(value: Any, operator: str, argument: Any) -> bool:
    """The documented semantics, in plain Python."""
    elements = _elements(value)
    if operator == "$eq":
        return any(_scalar_equals(e, argument) for e in elements)
    if operator == "$ne":
        return not any(_scalar_equals(e, argument) for e in elements)
    if operator in ("$in", "$nin"):
        found = any(_scalar_equals(e, a) for e in elements for a in argument)
        return found if operator == "$in" else not found
    if operator == "$exists":
        return (value is not MISSING) == argument
    compare = {
        "$gt": lambda x: x > argument,
        "$gte": lambda x: x >= argument,
        "$lt": lambda x: x < argument,
        "$lte": lambda x: x <= argument,
    }[operator]
    return any(_is_number(e) and compare(float(e)) for e in elements)


def reference(metadata: dict[str, Any], node: dict[str, Any]) -> bool:
    results = []
    for key, condition in node.items():
        if key == "$and":
            results.append(all(reference(metadata, child) for child in condition))
        elif key == "$or":
            results.append(any(reference(metadata, child) for child in condition))
        else:
            value = metadata.get(key, MISSING)
            if isinstance(condition, dict):
                results.append(
                    all(_reference_operator(value, op, arg) for op, arg in condition.items())
                )
            else:
                results.append(_reference_operator(value, "$eq", condition))
    return all(results)


@pytest.fixture(scope="module")
def connection() -> duckdb.DuckDBPyConnection:
    database = duckdb.connect()
    database.execute("CREATE TABLE t (id INTEGER, metadata JSON)")
    return database


def _load(connection: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]]) -> None:
    connection.execute("DELETE FROM t")
    for index, row in enumerate(rows):
        connection.execute("INSERT INTO t VALUES (?, ?)", [index, json.dumps(row)])


def _selected(connection: duckdb.DuckDBPyConnection, filter: Any) -> set[int]:
    sql, parameters = compile_filter(filter)
    rows = connection.execute(f"SELECT id FROM t WHERE {sql}", parameters).fetchall()
    return {row[0] for row in rows}


@pytest.mark.slow
@SETTINGS
@given(rows=st.lists(metadata_dicts, min_size=1, max_size=8), filter=valid_filters)
@example(rows=[{"genre": "drama"}], filter={"genre": False})  # CAST('"drama"' AS BOOLEAN)
@example(rows=[{"genre": "drama"}], filter={"genre": {"$gt": 1}})  # CAST AS DOUBLE
@example(rows=[{"ключ": "v"}, {"é": 1}], filter={"$or": [{"ключ": "v"}, {"é": 1}]})
def test_compiled_filter_selects_what_the_reference_selects(connection, rows, filter) -> None:
    _load(connection, rows)
    expected = {index for index, row in enumerate(rows) if reference(row, filter)}
    assert _selected(connection, filter) == expected
    # The same filter given as JSON text compiles to the same selection.
    assert _selected(connection, json.dumps(filter)) == expected


json_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([2**63, 2**64, 10**400, -(10**400)])  # past int64, past a double
    | st.floats(allow_nan=False)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=8)
)
junk_keys = st.sampled_from([*OPERATORS, "$and", "$or", "$not", "$regex", "", *FIELDS]) | st.text(
    st.characters(exclude_categories=("Cs",)), max_size=6
)
junk = st.recursive(
    json_leaves,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(junk_keys, children, max_size=4)
    ),
    max_leaves=16,
)


@pytest.mark.slow
@SETTINGS
@given(filter=junk | st.dictionaries(junk_keys, junk, max_size=4))
@example(filter={"year": 10**400})  # OverflowError in float(), not InvalidFilterError
@example(filter={"year": {"$in": [-(10**400)]}})
@example(filter={"genre": {"\n": None}})  # an operator echoed into the message, newline and all
@example(filter={"$\n": 1})
def test_junk_filters_compile_or_raise_invalid_filter_error(connection, filter) -> None:
    _load(connection, [{"genre": "drama", "year": 2020, "tags": ["a"]}, {}])
    try:
        sql, parameters = compile_filter(filter)
    except InvalidFilterError as error:
        assert "\n" not in str(error)
        return
    # Whatever compiles also runs, and selects what the reference selects.
    rows = connection.execute(f"SELECT id FROM t WHERE {sql}", parameters).fetchall()
    expected = {
        index
        for index, row in enumerate([{"genre": "drama", "year": 2020, "tags": ["a"]}, {}])
        if reference(row, filter)
    }
    assert {row[0] for row in rows} == expected


hostile_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40) | st.sampled_from(
    [
        "x' OR 1=1 --",
        "'; DROP TABLE t; --",
        "\\' OR '1'='1",
        "$1",
        "?",
        "') OR true OR ('",
        "\"]') OR 1=1 --",
        "$.genre",
        "a\x00b",
        "COPY t TO '/tmp/x.csv'",
    ]
)


@pytest.mark.slow
@SETTINGS
@given(
    rows=st.lists(metadata_dicts, min_size=1, max_size=5),
    key=hostile_text,
    value=hostile_text,
    operator=st.sampled_from(["$eq", "$ne", "$in", "$nin"]),
)
@example(rows=[{}], key="\x1f", value="v", operator="$eq")  # key escaped as \u001f
@example(rows=[{}], key="año", value="v", operator="$in")  # key escaped as \u00f1
def test_strings_in_keys_and_values_never_change_the_statement(
    connection, rows, key, value, operator
) -> None:
    rows = [*rows, {key: value} if key else {}]
    _load(connection, rows)
    argument = [value] if operator in ("$in", "$nin") else value
    filters = [{"genre": {operator: argument}}]
    if key and not key.startswith("$"):
        filters.append({key: {operator: argument}})
    for filter in filters:
        expected = {index for index, row in enumerate(rows) if reference(row, filter)}
        assert _selected(connection, filter) == expected
    assert connection.execute("SELECT count(*) FROM t").fetchall() == [(len(rows),)]
    tables = connection.execute("SELECT table_name FROM duckdb_tables()").fetchall()
    assert tables == [("t",)]


# -- chunkers ----------------------------------------------------------------------------------

# Letters, digits, punctuation, CJK, emoji and every kind of whitespace/line break Unicode has.
any_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=60)
word = st.text(st.characters(categories=("L", "N")), min_size=1, max_size=12)
sentence = (
    st.lists(word, min_size=1, max_size=12)
    .map(" ".join)
    .flatmap(lambda s: st.sampled_from([".", "!", "?", "。", "", ";"]).map(lambda end: s + end))
)
paragraph = st.lists(sentence, min_size=1, max_size=8).flatmap(
    lambda sentences: st.sampled_from([" ", "\n"]).map(lambda joiner: joiner.join(sentences))
)
heading = st.tuples(st.integers(1, 6), st.lists(word, min_size=1, max_size=4)).map(
    lambda pair: "#" * pair[0] + " " + " ".join(pair[1])
)
setext_heading = st.tuples(st.lists(word, min_size=1, max_size=4), st.sampled_from("=-")).map(
    lambda pair: " ".join(pair[0]) + "\n" + pair[1] * 3
)
code_line = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="`~"), max_size=80)
fence = st.tuples(
    st.sampled_from(["```", "~~~", "```python"]), st.lists(code_line, max_size=12)
).map(lambda pair: pair[0] + "\n" + "\n".join(pair[1]) + "\n" + pair[0][:3])
indented_code = st.lists(word, min_size=1, max_size=6).map(
    lambda words: "\n".join("    " + w for w in words)
)
table = st.lists(st.tuples(word, word), min_size=1, max_size=10).map(
    lambda rows: "| a | b |\n|---|---|\n" + "\n".join(f"| {x} | {y} |" for x, y in rows)
)
bullet_list = st.lists(sentence, min_size=1, max_size=5).map(
    lambda items: "\n".join(f"- {item}" for item in items)
)
ordered_list = st.lists(sentence, min_size=1, max_size=5).map(
    lambda items: "\n".join(f"{i}. {item}" for i, item in enumerate(items, 1))
)
quote = paragraph.map(lambda text: "> " + text.replace("\n", "\n> "))
html = word.map(lambda w: f"<div>\n{w}\n</div>")
markdown_block = st.one_of(
    paragraph,
    heading,
    setext_heading,
    fence,
    indented_code,
    table,
    bullet_list,
    ordered_list,
    quote,
    html,
    st.just("---"),
    st.just("[link]: https://example.com"),
    any_text,
)
front_matter = st.dictionaries(
    st.sampled_from(["title", "kind", "year"]), st.sampled_from(["Guide", "x", "2024"]), min_size=1
).map(lambda data: "---\n" + "".join(f"{k}: {v}\n" for k, v in data.items()) + "---\n")
markdown_documents = st.tuples(
    st.none() | front_matter,
    st.lists(markdown_block, max_size=12),
    st.sampled_from(["\n\n", "\n", "\r\n\r\n"]),
).map(lambda parts: (parts[0] or "") + parts[2].join(parts[1]))


def _visible(text: str) -> Counter[str]:
    return Counter(character for character in text if not character.isspace())


def _heading_lines(body: str) -> set[int]:
    """Line numbers (as CommonMark counts lines) of the document's top-level headings."""
    source = body.encode()
    lines: set[int] = set()
    for start, end in _top_level(body, {"Heading"}):
        # (the byte before ``end`` may sit inside a character: its line is what counts)
        first = len(_commonmark_lines(source[:start].decode(errors="ignore"))) - 1
        last = len(_commonmark_lines(source[: max(start, end - 1)].decode(errors="ignore"))) - 1
        lines.update(range(first, last + 1))
    return lines


def _top_level(text: str, kinds: set[str] | None = None) -> list[tuple[int, int]]:
    """Byte spans of the top-level blocks the parser finds (of ``kinds``, if given)."""
    spans, depth = [], 0
    for event, span in pyromark.events_with_range(text, options=pyromark.Options.ENABLE_TABLES):
        tag = next(iter(event)) if isinstance(event, dict) else event
        if depth == 0:
            start = event["Start"] if tag == "Start" else tag
            kind = start if isinstance(start, str) else next(iter(start))
            if kinds is None or kind in kinds:
                spans.append((span["start"], span["end"]))
        depth += (tag == "Start") - (tag == "End")
    return spans


def _commonmark_lines(body: str) -> list[str]:
    # CommonMark ends a line at \n, \r\n or \r, and nowhere else (not at U+2028, \f, \x85...).
    return re.split(r"\r\n|\r|\n", body)


def _check_ids(chunks: list[Any], source: str) -> None:
    assert [chunk.chunk_id for chunk in chunks] == [f"{source}#{i}" for i in range(len(chunks))]
    assert [chunk.position for chunk in chunks] == list(range(len(chunks)))
    assert all(chunk.source == source for chunk in chunks)
    assert all(chunk.text.strip() for chunk in chunks)


def _is_single_atomic_block(text: str) -> bool:
    return len(_top_level(text)) == 1 and len(_top_level(text, _ATOMIC)) == 1


_ATOMIC = {"CodeBlock", "Table", "HtmlBlock"}


@pytest.mark.slow
@SETTINGS
@given(
    document=markdown_documents,
    max_chars=st.integers(20, 400),
    atomic_factor=st.integers(1, 4),
)
@example(document="0.\n\n\x1e\n\n#", max_chars=20, atomic_factor=1)  # \x1e: a line break?
@example(document="a\u2028b\nc\n# H\n\nd\n", max_chars=100, atomic_factor=1)  # "c" is lost
@example(document="0.\n\n 0", max_chars=20, atomic_factor=1)  # the list's span ends in " 0"
def test_markdown_chunks_lose_and_duplicate_nothing(document, max_chars, atomic_factor) -> None:
    """Every visible character of the body reaches exactly one chunk, except the heading lines
    (they become titles) and the front matter (it becomes metadata), when markup is kept."""
    chunker = MarkdownChunker(
        max_chars=max_chars, max_atomic_chars=max_chars * atomic_factor, reduce_markup=False
    )
    chunks = chunker.chunk(document, "docs/guide.md")
    _metadata, body = split_front_matter(document)
    headings = _heading_lines(body)
    kept = "\n".join(
        line for number, line in enumerate(_commonmark_lines(body)) if number not in headings
    )
    assert _visible("".join(chunk.text for chunk in chunks)) == _visible(kept)
    _check_ids(chunks, "docs/guide.md")


@pytest.mark.slow
@SETTINGS
@given(document=markdown_documents, max_chars=st.integers(20, 400))
@example(document="<div>\nword\n</div>", max_chars=20)
def test_reduced_markdown_chunks_only_leave_things_out(document, max_chars) -> None:
    """Reducing markup drops characters (tags, template tags) but never adds or repeats one
    (an HTML entity is its character)."""
    chunks = MarkdownChunker(max_chars=max_chars).chunk(document, "guide.md")
    _metadata, body = split_front_matter(document)
    allowed = _visible(body) | _visible(unescape(body))
    assert not _visible("".join(chunk.text for chunk in chunks)) - allowed
    _check_ids(chunks, "guide.md")


@pytest.mark.slow
@SETTINGS
@given(
    document=markdown_documents,
    max_chars=st.integers(20, 400),
    atomic_factor=st.integers(1, 4),
)
@example(document="0|0\n-|-\n" + "0" * 21, max_chars=20, atomic_factor=1)  # a long table row
@example(document="```\n" + "x" * 100 + "\n```", max_chars=20, atomic_factor=2)  # a long line
@example(document="```\n" + "   \n" * 30 + "abc\n```", max_chars=20, atomic_factor=2)  # ids #0, #6
def test_markdown_chunks_respect_the_size_limits(document, max_chars, atomic_factor) -> None:
    """A chunk is at most max_chars, unless it is one whole code block, table or HTML block of
    at most max_atomic_chars (a larger one is split, so no chunk is ever larger than that)."""
    max_atomic_chars = max_chars * atomic_factor
    chunker = MarkdownChunker(max_chars=max_chars, max_atomic_chars=max_atomic_chars)
    chunks = chunker.chunk(document, "guide.md")
    _metadata, body = split_front_matter(document)
    for chunk in chunks:
        if len(chunk.text) > max_chars:
            assert len(chunk.text) <= max_atomic_chars, chunk.text
            assert chunk.text in body
            assert _is_single_atomic_block(chunk.text), chunk.text
    _check_ids(chunks, "guide.md")


@pytest.mark.slow
@SETTINGS
@given(document=markdown_documents)
def test_markdown_front_matter_becomes_metadata_not_text(document) -> None:
    metadata, body = split_front_matter(document)
    chunks = MarkdownChunker().chunk(document, "a.md")
    assert all(chunk.metadata == metadata for chunk in chunks)
    if metadata:
        assert body != document


plain_documents = st.lists(
    paragraph | any_text | word.map(lambda w: w * 50),
    max_size=10,
).flatmap(
    lambda parts: st.sampled_from(["\n\n", "\n", " \n \t\n", "\r\n\r\n"]).map(
        lambda joiner: joiner.join(parts)
    )
)


@pytest.mark.slow
@SETTINGS
@given(document=plain_documents, max_chars=st.integers(1, 300))
def test_text_chunks_lose_nothing_and_stay_within_max_chars(document, max_chars) -> None:
    chunks = TextChunker(max_chars=max_chars).chunk(document, "notes.txt")
    assert _visible("".join(chunk.text for chunk in chunks)) == _visible(document)
    assert all(len(chunk.text) <= max_chars for chunk in chunks)
    _check_ids(chunks, "notes.txt")
    # Splitting never reorders: the visible characters come out in document order.
    assert "".join(c for chunk in chunks for c in chunk.text if not c.isspace()) == "".join(
        c for c in document if not c.isspace()
    )


# Documentation markup, whole and broken: a chunker reads it or says why it skips the file.
rst_pieces = st.sampled_from(
    [
        "Title\n=====\n",
        "Sub\n---\n",
        "=====\n",
        ".. note::\n\n   Mind it.\n",
        ".. code-block::\n\n   x = 1\n",
        ".. versionchanged:: 2.0\n",
        ".. frob:: arg\n   :opt: 1\n\n   body\n",
        ".. toctree::\n   :maxdepth: 2\n",
        ":func:`~a.b` and :ref:`T <x>`",
        "|undefined|",
        "`unclosed",
        "* item\n",
        "  indented\n",
        "+--+\n|a |\n+--+\n",
        ".. |s| replace:: |s|\n",
        ":orphan:\n",
    ]
)
html_pieces = st.sampled_from(
    [
        *("<h1>", "</h1>", "<h3>T</h3>", "<pre>", "</pre>", "<table><tr><td>", "<ul><li>"),
        *("<a href=x>", "<main>", "<nav>", "</div>", "<br>", "<!--", "<script>"),
        '<p class="admonition-title">',
    ]
)
markup_words = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)


@pytest.mark.slow
@SETTINGS
@given(pieces=st.lists(rst_pieces | markup_words, max_size=25), max_chars=st.integers(20, 300))
def test_rst_chunker_reads_any_text(pieces, max_chars) -> None:
    chunks = RstChunker(max_chars=max_chars).chunk("\n".join(pieces), "page.rst")
    _check_ids(chunks, "page.rst")
    assert all(_within(chunk.text, max_chars) for chunk in chunks)


@SETTINGS
@given(pieces=st.lists(html_pieces | markup_words, max_size=40), max_chars=st.integers(20, 300))
@example(pieces=["<table><tr><td>", "00", "0000", "0000000", "00000000"], max_chars=20)
def test_html_chunker_reads_any_text_or_skips_it(pieces, max_chars) -> None:
    try:
        chunks = HtmlChunker(max_chars=max_chars, min_prose_letters=0).chunk(
            "".join(pieces), "a.html"
        )
    except SkipFile:
        return
    _check_ids(chunks, "a.html")
    # A table is never cut, and one of a single cell reads as plain text, without " | ".
    tables = any("<table" in piece for piece in pieces)
    assert all(_within(chunk.text, max_chars) or tables for chunk in chunks)


def _within(text: str, max_chars: int) -> bool:
    """At most ``max_chars``, but for a code block or table, which is never cut."""
    return len(text) <= max_chars or "```" in text or " | " in text


NOTEBOOK_KEYS = ["cells", "cell_type", "source", "outputs", "data", "text", "text/plain"]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(NOTEBOOK_KEYS) | st.text(max_size=4), inner, max_size=5)
    ),
    max_leaves=30,
)


@pytest.mark.slow
@SETTINGS
@given(value=json_values)
def test_notebook_chunker_reads_any_json_or_skips_it(value) -> None:
    try:
        NotebookChunker(include_outputs=True).chunk(json.dumps(value), "a.ipynb")
    except SkipFile as reason:
        assert "\n" not in str(reason)


# -- fusion ------------------------------------------------------------------------------------


@st.composite
def rankings(draw: st.DrawFn, positive: bool = False) -> Ranking:
    keys = draw(st.lists(st.integers(0, 40), unique=True, max_size=15))
    low = 1 if positive else -1000
    # Scores on a 1/1000 grid: distinct scores stay distinct after division by the best one.
    scores = sorted(
        (draw(st.integers(low, 1000)) / 1000 for _ in keys),
        reverse=True,
    )
    return Ranking(np.asarray(keys, dtype=np.int64), np.asarray(scores, dtype=np.float64))


methods = st.sampled_from(["relative", "rrf"])
weights = st.sampled_from([0.0, 0.3, 0.5, 0.7, 1.0]) | st.floats(0, 1)


def _fusion(method: str, weight: float, k: int = 60) -> FusionSettings:
    return FusionSettings(method=method, lexical_weight=weight, rrf_k=k)


def _effective(ranking: Ranking, keys: list[int], side: str) -> list[float]:
    """Each key's score in this ranking; a key it did not return gets the vector signal's
    lowest score, or nothing from BM25 (whose scores are positive)."""
    scores = dict(zip(ranking.keys.tolist(), ranking.scores.tolist(), strict=True))
    outside = (min(scores.values()) if scores else 0.0) if side == "vector" else 0.0
    return [scores.get(key, outside) for key in keys]


@pytest.mark.slow
@SETTINGS
@given(
    vector=rankings(),
    lexical=rankings(positive=True),
    method=methods,
    weight=weights,
    k=st.integers(1, 100),
)
def test_fused_list_is_the_union_sorted_with_true_ranks(vector, lexical, method, weight, k):
    fused = fuse(vector, lexical, _fusion(method, weight, k))
    keys = fused.keys.tolist()
    assert len(keys) == len(set(keys))
    assert set(keys) == set(vector.keys.tolist()) | set(lexical.keys.tolist())
    # Best first; scores closer than TIE_TOLERANCE are ties, so a chain of ties may climb by
    # at most that much per step.
    slack = TIE_TOLERANCE * np.maximum(np.abs(fused.scores), 1.0) * len(keys)
    assert all(fused.scores[1:] <= fused.scores[:-1] + slack[:-1])
    assert np.isfinite(fused.scores).all()
    vector_keys, lexical_keys = vector.keys.tolist(), lexical.keys.tolist()
    for key, vector_rank, text_rank in zip(
        keys, fused.vector_ranks.tolist(), fused.text_ranks.tolist(), strict=True
    ):
        assert vector_rank == (vector_keys.index(key) + 1 if key in vector_keys else 0)
        assert text_rank == (lexical_keys.index(key) + 1 if key in lexical_keys else 0)
    # Equal scores are ordered by key, so the result does not depend on input order.
    for (score_a, key_a), (score_b, key_b) in zip(
        zip(fused.scores, keys, strict=True),
        zip(fused.scores[1:], keys[1:], strict=True),
        strict=False,
    ):
        if score_a == score_b:
            assert key_a < key_b


@pytest.mark.slow
@SETTINGS
@given(vector=rankings(), lexical=rankings(positive=True))
def test_rrf_with_one_weight_at_zero_follows_the_other_signal(vector, lexical) -> None:
    only_vector = fuse(vector, lexical, _fusion("rrf", 0.0)).keys.tolist()
    rest = sorted(set(lexical.keys.tolist()) - set(vector.keys.tolist()))
    assert only_vector == vector.keys.tolist() + rest
    only_text = fuse(vector, lexical, _fusion("rrf", 1.0)).keys.tolist()
    rest = sorted(set(vector.keys.tolist()) - set(lexical.keys.tolist()))
    assert only_text == lexical.keys.tolist() + rest


@pytest.mark.slow
@SETTINGS
@given(vector=rankings(positive=True), lexical=rankings(positive=True))
def test_relative_with_one_weight_at_zero_orders_by_the_other_signal(vector, lexical) -> None:
    """With weight 0 the order is the vector scores' (a key the vector signal did not return
    counts as its lowest score), ties by key; with weight 1 BM25's (a key it did not return
    counts as 0)."""
    for weight, signal, side in ((0.0, vector, "vector"), (1.0, lexical, "lexical")):
        fused = fuse(vector, lexical, _fusion("relative", weight)).keys.tolist()
        if len(signal) == 0:
            assert fused == sorted(fused)
            continue
        effective = _effective(signal, fused, side)
        assert fused == [key for _, key in sorted(zip((-s for s in effective), fused, strict=True))]


@pytest.mark.slow
@SETTINGS
@given(vector=rankings(), lexical=rankings(positive=True))
def test_rrf_at_half_weight_is_symmetric_in_the_two_signals(vector, lexical) -> None:
    """(Relative fusion is not: a chunk outside the vector candidates keeps their lowest
    cosine, one outside BM25's gets nothing from BM25.)"""
    settings_ = _fusion("rrf", 0.5)
    forward = fuse(vector, lexical, settings_)
    backward = fuse(lexical, vector, settings_)
    assert forward.keys.tolist() == backward.keys.tolist()
    assert forward.scores.tolist() == backward.scores.tolist()
    assert forward.vector_ranks.tolist() == backward.text_ranks.tolist()
    assert forward.text_ranks.tolist() == backward.vector_ranks.tolist()


@pytest.mark.slow
@SETTINGS
@given(vector=rankings(), lexical=rankings(positive=True), method=methods, weight=weights)
def test_a_key_better_in_both_signals_never_ranks_below(vector, lexical, method, weight) -> None:
    fused = fuse(vector, lexical, _fusion(method, weight))
    keys = fused.keys.tolist()
    score = dict(zip(keys, fused.scores.tolist(), strict=True))
    if method == "rrf":  # better = a smaller rank; not returned = worse than any rank
        infinite = len(keys) + 1
        v = {k: r or infinite for k, r in zip(keys, fused.vector_ranks.tolist(), strict=True)}
        t = {k: r or infinite for k, r in zip(keys, fused.text_ranks.tolist(), strict=True)}
        dominates = lambda a, b: v[a] <= v[b] and t[a] <= t[b]  # noqa: E731
    else:
        v = dict(zip(keys, _effective(vector, keys, "vector"), strict=True))
        t = dict(zip(keys, _effective(lexical, keys, "lexical"), strict=True))
        dominates = lambda a, b: v[a] >= v[b] and t[a] >= t[b]  # noqa: E731
    for a in keys:
        for b in keys:
            if dominates(a, b):
                assert score[a] >= score[b], (a, b)


@pytest.mark.slow
@SETTINGS
@given(vector=rankings(), lexical=rankings(positive=True), method=methods, weight=weights)
def test_fusing_with_an_empty_signal_keeps_the_other_order(vector, lexical, method, weight):
    # At weight 1 the vector signal counts for nothing; near 1 its 1/1000 steps shrink below
    # TIE_TOLERANCE and its chunks become ties, ordered by key.
    assume(len(vector) > 0 and weight <= 0.99)
    empty = Ranking.empty()
    fused = fuse(vector, empty, _fusion(method, weight))
    assert set(fused.keys.tolist()) == set(vector.keys.tolist())
    assert all(rank == 0 for rank in fused.text_ranks.tolist())
    by_score = dict(zip(vector.keys.tolist(), vector.scores.tolist(), strict=True))
    ordered = [by_score[key] for key in fused.keys.tolist()]
    if method == "rrf" or max(by_score.values()) > 0:
        assert ordered == sorted(ordered, reverse=True)


# Thai, Lao, Burmese, Khmer and Hangul (with the enclosed Hangul NFKC unpacks): the blocks
# whose text exact-v2 tokenizes differently from exact-v1.
CHANGED_IN_V2 = re.compile(
    "[\u0e00-\u0eff\u1000-\u11ff\u1780-\u17ff\u19e0-\u19ff\u3130-\u318f\u3200-\u327f"
    "\ua960-\ua97f\ua9e0-\ua9ff\uaa60-\uaa7f\uac00-\ud7ff\uffa0-\uffdc]"
)


@SETTINGS
@given(text=st.text())
@example(text="v2.0 北京是首都 g\u0303 Москва ①")
def test_text_outside_the_scripts_exact_v2_splits_tokenizes_as_exact_v1_did(text) -> None:
    """Indexes built with exact-v1 are re-tokenized, but their other text keeps its tokens
    (counted: exact-v1 put a compound's parts right after it, exact-v2 after all the words)."""
    assume(not CHANGED_IN_V2.search(text))
    assert Counter(tokenize(text)) == Counter(exact_v1_tokenizer.tokenize(text))


# With CHANGED_IN_V2, the characters of every script split into n-grams (and some more).
HAN_OR_KANA = regex.compile(r"[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}]")


def for_the_macro(text: str) -> bool:
    """Whether ``text`` is what the macro is for (see ``index/plain_sql.py``): no script split
    into n-grams, nothing NFKC changes beyond NFC; and case folding leaves it normalised (the
    macro folds İ before it normalises: before a mark such as U+094D, the marks' order
    differs)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return (
        not CHANGED_IN_V2.search(folded)
        and not HAN_OR_KANA.search(folded)
        and unicodedata.normalize("NFKC", text) == unicodedata.normalize("NFC", text)
        and unicodedata.is_normalized("NFC", folded)
    )


# Letters that fold oddly (ß, dotted and dotless i, Kelvin sign, final sigma, Cherokee), marks,
# joiners in every position, other scripts' words, symbols; and any assigned character but NUL,
# which ends a string in DuckDB's regular expressions.
MACRO_CHARACTERS = (
    st.sampled_from("\u00e9\u00df\u0130\u0131\u212a\u00c5\u03a3\u03c2\u0390\u13a0\uab70\u0345")
    | st.sampled_from("\u0416\u0451\u0587\u05d0\u0628\u0663\u0915\u093f\u094d\u0301\u10d0")
    | st.sampled_from("\u2192\u2500\u201c\u2014\u20ac\U0001f600")
    | st.sampled_from(["v2.0", "covid-19", "O'Neil", "a..b", "-x-", "_id_", "it's-9'", "-"])
    | st.characters(max_codepoint=127, exclude_characters="\x00")
    | st.characters(exclude_categories=("Cs", "Cn"), exclude_characters="\x00").filter(
        for_the_macro
    )
)


@pytest.fixture(scope="module")
def macro() -> duckdb.DuckDBPyConnection:
    """A connection holding ``search_text_tokens``, the SQL macro's tokenizer."""
    connection = duckdb.connect()
    connection.execute(macro_statements([], Languages())[0])
    return connection


@SETTINGS
@given(text=st.lists(MACRO_CHARACTERS, max_size=40).map("".join))
@example(text="TNF-\u03b1 and IL-1\u03b2 (p < 0.05), \u03bcM \u2013 caf\u00e9's na\u00efve")
@example(text="STRASSE Stra\u00dfe \u0130stanbul \u03a3\u039f\u03a3 \u13a0\uab70")
@example(text="End. 'quoted' --flag a.-b v2.0. .5 x\x1cy\x7fz;w it's-9'")
def test_the_sql_macro_tokenizes_as_python_does(macro, text) -> None:
    """The rule's two implementations, ``tokenizer.tokenize`` and the ``search_text`` macro,
    on the text the macro is for. Counted: the macro puts a compound's parts right after it,
    Python after all the words."""
    assume(for_the_macro(text))
    found = macro.execute("FROM search_text_tokens(?)", [text]).fetchall()
    assert Counter(token for (token,) in found) == Counter(tokenize(text))


@SETTINGS
@given(text=st.text())
def test_tokens_are_never_empty_and_never_hold_a_space(text) -> None:
    """The index stores each chunk's tokens joined by spaces and splits them in SQL."""
    assert all(token and " " not in token for token in tokenize(text))


# -- top-k selection -------------------------------------------------------------------------


@SETTINGS
@given(
    scores=st.lists(st.tuples(st.integers(-50, 50), st.integers(0, 3)), min_size=1, max_size=300),
    k=st.integers(1, 40),
)
def test_the_top_k_is_the_true_one_with_its_ties(scores, k) -> None:
    """Scores on a coarse grid, some a hair apart (within TIE_TOLERANCE), make ties and
    near-ties common."""
    assume(k <= len(scores))
    values = np.asarray([step / 7 + hair * 2.5e-7 for step, hair in scores], dtype=np.float32)
    cut = sorted(values.tolist(), reverse=True)[k - 1]
    floor = cut - TIE_TOLERANCE * max(abs(cut), 1.0)
    expected = [i for i, value in enumerate(values) if value >= np.float32(floor)]
    assert best_with_ties(values, k).tolist() == expected


# -- the two ways to answer: SQL and the in-memory snapshot -------------------------------------

# A small vocabulary makes ties, repeated texts and texts with no token (zero vectors) common.
corpus_words = st.sampled_from(["alpha", "beta", "gamma", "delta", "E42", "v2.0", "!!!", ""])
corpus_texts = st.lists(corpus_words, max_size=5).map(" ".join)


@pytest.mark.slow
@settings(SETTINGS, max_examples=60)  # each example writes and opens an index file
@given(
    texts=st.lists(corpus_texts, min_size=1, max_size=25),
    query=corpus_texts.filter(str.strip),
    top_k=st.integers(min_value=1, max_value=30),
    mode=st.sampled_from(["hybrid", "vector", "text"]),
    match=st.sampled_from(["any", "all"]),
)
@example(texts=["", "alpha", "!!!"], query="alpha", top_k=3, mode="vector", match="any")
@example(
    texts=["alpha beta", "beta alpha", "alpha"], query="!!!", top_k=3, mode="vector", match="any"
)
@example(
    texts=["alpha beta gamma gamma", "alpha alpha beta gamma"],
    query="alpha gamma",
    top_k=1,
    mode="hybrid",
    match="any",
)
@example(
    texts=["alpha beta", "beta", "gamma"], query="beta alpha", top_k=3, mode="vector", match="all"
)
def test_sql_and_memory_rank_identically(
    tmp_path_factory, texts, query, top_k, mode, match
) -> None:
    path = tmp_path_factory.mktemp("paths") / "index.duckdb"
    with VectorStore(path, backend="hashing:64") as store:
        store.add_texts(texts, ids=[f"c{i:02d}" for i in range(len(texts))])
    answers = []
    for memory_index in (True, False):
        with VectorStore(path, read_only=True, memory_index=memory_index) as store:
            if mode == "text":
                hits = store.query_text(query, top_k, match=match)
            else:
                hits = store.query(query, top_k, hybrid=mode == "hybrid", match=match)
        answers.append(hits)
    in_memory, in_sql = answers
    assert [h.chunk.chunk_id for h in in_memory] == [h.chunk.chunk_id for h in in_sql]
    assert in_memory.match == in_sql.match
    if in_sql.match == "all":  # every hit has every query word, in some form
        wanted = set(parse_query(query).all_terms(["english"]))
        assert all(wanted <= set(index_terms(None, h.chunk.text)) for h in in_sql)
    for a, b in zip(in_memory, in_sql, strict=True):
        assert a.score == pytest.approx(b.score, abs=1e-6)
        assert not np.isnan(a.score)
        assert (a.vector_rank, a.text_rank) == (b.vector_rank, b.text_rank)
