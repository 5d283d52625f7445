"""Plain DuckDB: an index file opened by DuckDB alone offers ``chunk_view`` and the
``search_text`` macro, which ranks as the SDK's BM25 search does; the oldest DuckDB release
pyproject.toml accepts opens the file, as a library and as the ``duckdb`` CLI (installed by
``make oldest-duckdb``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
import unicodedata
from pathlib import Path

import duckdb
import pytest
from conftest import run_cli
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from duckdb_vectors import VectorStore
from duckdb_vectors.index.db import CONNECTION_CONFIG, OLDEST_DUCKDB
from duckdb_vectors.index.manifest import LibraryRecord
from duckdb_vectors.index.plain_sql import case_folds
from duckdb_vectors.index.schema import SCHEMA_VERSION
from duckdb_vectors.index.slices import LIBRARY_KEY
from duckdb_vectors.index.terms import QUESTION_WORDS, index_terms, index_words, word_forms
from duckdb_vectors.tokenizer import tokenize

ROOT = Path(__file__).resolve().parent.parent
OLDEST = ROOT / ".venv-oldest-duckdb" / "bin"
DOCS = ROOT / "tests" / "data" / "jekyll-duckdb" / "site"
# chunk_view's columns, a contract (docs/plain-duckdb.md): only ever added to at the end.
VIEW_COLUMNS = ["chunk_id", "source", "position", "title", "url", "slice", "text", "metadata"]


@pytest.fixture(scope="session")
def oldest() -> Path:
    """The venv of the oldest accepted DuckDB and its CLI: in CI a failure saying what is
    missing (it must run there), elsewhere a skip saying so."""
    if (OLDEST / "duckdb").is_file() and (OLDEST / "python").is_file():
        return OLDEST
    problem = "the oldest accepted DuckDB is not installed: run make oldest-duckdb"
    if os.environ.get("CI"):
        pytest.fail(problem, pytrace=False)
    pytest.skip(problem)


@pytest.fixture(scope="module")
def docs_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A slice of DuckDB's docs (version=1.5), with citation URLs; BM25 needs no model."""
    path = tmp_path_factory.mktemp("plain") / "docs.duckdb"
    built = run_cli(
        "index", str(DOCS), "--db", str(path), "--backend", "hashing:64", "--set", "version=1.5",
        "--base-url", "https://duckdb.org/", "--no-progress",
    )  # fmt: skip
    assert built.exit_code == 0, built.output
    return path


def cli(oldest: Path, database: Path, sql: str) -> list[dict]:
    """``sql``'s rows, as the oldest DuckDB CLI prints them with ``-json``, the file read-only."""
    done = subprocess.run(
        [str(oldest / "duckdb"), "-readonly", "-json", str(database), "-c", sql],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout or "[]")


def sdk_ids(database: Path, query: str, top_k: int, **options: object) -> list[str]:
    with VectorStore(database, read_only=True) as store:
        return [hit.chunk.chunk_id for hit in store.query_text(query, top_k, **options)]


def test_the_oldest_duckdb_is_the_one_pyproject_accepts() -> None:
    """The storage format files are written in, the pinned test venv and pyproject.toml's
    minimum are one release."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    minimum = next(
        re.fullmatch(r"duckdb>=([\d.]+)", d).group(1)
        for d in project["project"]["dependencies"]
        if d.startswith("duckdb>")
    )
    assert f"{minimum}.0.0"[: len(OLDEST_DUCKDB)] == OLDEST_DUCKDB
    assert CONNECTION_CONFIG["storage_compatibility_version"] == f"v{OLDEST_DUCKDB}"
    assert f"duckdb=={OLDEST_DUCKDB}" in (ROOT / "tests" / "oldest-duckdb.txt").read_text()


def test_the_documented_queries_answer_in_the_oldest_duckdb_cli(
    oldest: Path, docs_index: Path
) -> None:
    """What docs/plain-duckdb.md shows, run by DuckDB 1.4's CLI on a file DuckDB 2 wrote."""
    found = cli(oldest, docs_index, "FROM search_text('parquet metadata', k := 5)")
    assert [row["chunk_id"] for row in found] == sdk_ids(docs_index, "parquet metadata", 5)
    assert list(found[0]) == [*VIEW_COLUMNS, "score"]
    assert found[0]["url"].startswith("https://duckdb.org/")
    assert found[0]["slice"] == {"version": "1.5"}  # JSON, as JSON
    scores = [row["score"] for row in found]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0

    described = cli(oldest, docs_index, "DESCRIBE chunk_view")
    assert [row["column_name"] for row in described] == VIEW_COLUMNS
    counted = cli(
        oldest, docs_index, "SELECT count(*) AS n FROM chunk_view WHERE slice->>'version' = '1.5'"
    )
    with VectorStore(docs_index, read_only=True) as store:
        assert counted == [{"n": store.count()}]


def test_a_slice_scopes_the_search_as_the_sdk_filter_does(oldest: Path, docs_index: Path) -> None:
    sql = "FROM search_text('parquet metadata', k := 3, slice := {{'version': '{}'}})"
    in_slice = cli(oldest, docs_index, sql.format("1.5"))
    filtered = sdk_ids(docs_index, "parquet metadata", 3, filter={"version": "1.5"})
    assert [row["chunk_id"] for row in in_slice] == filtered
    assert cli(oldest, docs_index, sql.format("2.0")) == []


def test_the_oldest_duckdb_library_reads_the_view_and_searches(
    oldest: Path, docs_index: Path
) -> None:
    """Any client, not just the CLI: DuckDB 1.4.0's Python package, in a process of its own."""
    script = (
        "import duckdb, json, sys\n"
        "connection = duckdb.connect(sys.argv[1], read_only=True)\n"
        'found = connection.execute("FROM search_text(?, k := 4)", [sys.argv[2]]).fetchall()\n'
        "count = connection.execute('SELECT count(*) FROM chunk_view').fetchall()[0][0]\n"
        "print(json.dumps([duckdb.__version__, [row[0] for row in found], count]))\n"
    )
    done = subprocess.run(
        [str(oldest / "python"), "-c", script, str(docs_index), "How do I list the tables?"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    version, ids, count = json.loads(done.stdout)
    assert version == OLDEST_DUCKDB
    assert ids == sdk_ids(docs_index, "How do I list the tables?", 4) and ids
    with VectorStore(docs_index, read_only=True) as store:
        assert count == store.count()


def as_written_before_schema_7(path: Path) -> None:
    """What a file of schema 6 held: no word forms, no view, no macro."""
    with duckdb.connect(str(path), config=CONNECTION_CONFIG) as connection:
        connection.execute("DROP MACRO TABLE search_text")
        connection.execute("DROP VIEW chunk_view")
        connection.execute("DROP TABLE word_forms")
        connection.execute("DELETE FROM schema_migrations WHERE version > 6")
        connection.execute(  # as its last write recorded it
            "UPDATE manifest SET document = json_merge_patch(document, '{\"schema_version\": 6}')"
        )


def test_an_index_from_before_the_macro_gains_it_when_upgraded(
    oldest: Path, tmp_path: Path
) -> None:
    path = tmp_path / "old.duckdb"
    with VectorStore(path, backend="hashing:64") as store:
        store.add_texts(["Registering functions", "the registered function runs"])
    as_written_before_schema_7(path)
    assert sdk_ids(path, "registering", 2)  # readable read-only as it is
    upgraded = run_cli("upgrade", "--db", str(path))
    assert upgraded.exit_code == 0, upgraded.output
    assert f": schema {SCHEMA_VERSION}, tokenizer" in upgraded.stdout  # the file's, now
    with duckdb.connect(str(path), read_only=True) as connection:
        forms = dict(connection.execute("SELECT word, term FROM word_forms").fetchall())
        assert connection.execute("SELECT max(version) FROM schema_migrations").fetchall() == [
            (SCHEMA_VERSION,)
        ]
    assert forms["registering"] == forms["registered"] == "regist"
    found = cli(oldest, path, "FROM search_text('registering functions')")
    assert [row["chunk_id"] for row in found] == sdk_ids(path, "registering functions", 10)
    assert len(found) == 2


def as_written_before_schema_11(path: Path) -> None:
    """What a file of schema 10 held: the word forms of its one language, not named, and
    macros reading them so (dropped here: only an upgrade makes them again)."""
    with duckdb.connect(str(path), config=CONNECTION_CONFIG) as connection:
        connection.execute("DROP MACRO TABLE search_text")
        connection.execute("DROP MACRO TABLE search_text_terms")
        connection.execute("CREATE TABLE forms_of_schema_10 AS SELECT word, term FROM word_forms")
        connection.execute("DROP TABLE word_forms")
        connection.execute("ALTER TABLE forms_of_schema_10 RENAME TO word_forms")
        connection.execute("DELETE FROM schema_migrations WHERE version > 10")
        connection.execute(
            "UPDATE manifest SET document = json_merge_patch(document, '{\"schema_version\": 10}')"
        )


def test_an_index_of_schema_10_keeps_its_word_forms_in_its_language_when_upgraded(
    oldest: Path, tmp_path: Path
) -> None:
    path = tmp_path / "german.duckdb"
    with VectorStore(path, backend="hashing:64", language="german") as store:
        store.add_texts(["Die Verteidigung gab nur 308 Punkte ab", "die verteidigenden Champions"])
    as_written_before_schema_11(path)
    assert len(sdk_ids(path, "Verteidigungen", 5)) == 2  # readable read-only as it is
    upgraded = run_cli("upgrade", "--db", str(path))
    assert upgraded.exit_code == 0, upgraded.output
    assert f": schema {SCHEMA_VERSION}, tokenizer" in upgraded.stdout
    with duckdb.connect(str(path), read_only=True) as connection:
        forms = connection.execute("SELECT language, word, term FROM word_forms").fetchall()
    assert {language for language, _, _ in forms} == {"german"}
    assert {("german", "verteidigung", "verteid"), ("german", "punkte", "punkt")} <= set(forms)
    found = cli(oldest, path, "FROM search_text('verteidigenden')")
    assert sorted(row["chunk_id"] for row in found) == sorted(sdk_ids(path, "verteidigenden", 5))
    assert len(found) == 2


def test_a_word_the_index_never_held_is_looked_up_as_written(tmp_path: Path) -> None:
    """The one way the macro differs from the SDK, on purpose (no stemmer in SQL): 'register'
    never occurs, so SQL does not know it shares 'registering''s term."""
    path = tmp_path / "words.duckdb"
    with VectorStore(path, backend="hashing:64") as store:
        store.add_texts(["registering functions"])
    with VectorStore(path, read_only=True) as store:
        assert len(store.query_text("register")) == 1
        assert store.connection.execute("FROM search_text('register')").fetchall() == []


# -- the macro ranks as the SDK does -----------------------------------------------------------

# Words of space-separated scripts, with letters whose case folding DuckDB must reproduce (ß,
# final sigma, dotted capital I), inflected English words (their terms are stems), codes and
# compounds; all unchanged by NFKC, which DuckDB cannot apply.
LETTERS = "abcdefghijklmnopqrstuvwxyzéüøßñçABCDEFÉÜİабвгдежзийкПРСТαβγδεζηςσΣΛΌաբգدبس_"
VOCABULARY = [
    "index", "indexes", "indexing", "indexed", "register", "registering", "registered",
    "running", "runs", "run", "generously", "the", "how", "do", "I", "What's", "v2.0", "E42",
    "read_csv", "covid-19", "O'Neil", "Straße", "ΛΌΓΟΣ", "λόγος", "Москва", "москвы",
]  # fmt: skip
words = st.sampled_from(VOCABULARY) | st.text(st.sampled_from(LETTERS), min_size=1, max_size=7)
separators = st.sampled_from([" ", ", ", ". ", "\n", " — ", "; ", "-", "."])


@st.composite
def texts_of(draw: st.DrawFn, max_words: int) -> str:
    chosen = draw(st.lists(words, max_size=max_words))
    return "".join(word + draw(separators) for word in chosen)


def sql_ranking(store: VectorStore, query: str, top_k: int) -> list[tuple[str, float]]:
    return store.connection.execute(
        "SELECT chunk_id, score FROM search_text(?, k := ?)", [query, top_k]
    ).fetchall()


def unseen_stemmed_words(query: str, titles: list[str | None], texts: list[str]) -> bool:
    """Whether the query has a word the index never held whose term differs from it and is a
    term of the index (see test_a_word_the_index_never_held_is_looked_up_as_written)."""
    held = {
        word for title, text in zip(titles, texts, strict=True) for word in index_words(title, text)
    }
    terms = {
        term for title, text in zip(titles, texts, strict=True) for term in index_terms(title, text)
    }
    return any(
        word not in held and term != word and term in terms
        for word, term in zip(tokenize(query), word_forms(tokenize(query)), strict=True)
    )


@pytest.mark.slow
@settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    texts=st.lists(texts_of(12), min_size=1, max_size=12),
    titles=st.lists(st.none() | texts_of(3), min_size=12, max_size=12),
    query_words=st.lists(words | st.sampled_from(sorted(QUESTION_WORDS)), min_size=1, max_size=5),
    taken=st.lists(st.integers(0, 10_000), max_size=3),
    case=st.sampled_from([str, str.upper, str.title, str.lower]),
    top_k=st.integers(1, 15),
)
@example(
    texts=["Straße ΛΌΓΟΣ", "strasse λόγος λόγος", "how do I"],
    titles=["İndex"] + [None] * 11,
    query_words=["how", "do", "I"],
    taken=[],
    case=str.upper,
    top_k=3,
)
def test_search_text_ranks_as_the_sdk_does(
    tmp_path_factory, texts, titles, query_words, taken, case, top_k
) -> None:
    """Same chunks, same order, same scores (to float32's precision: the SDK's in-memory index
    weighs postings in float32), for queries of the index's words in any case, question words
    and other words."""
    titles = titles[: len(texts)]
    held = [
        word
        for title, text in zip(titles, texts, strict=True)
        for word in (title or "").split() + text.split()
    ]
    query = " ".join(
        case(word) for word in query_words + [held[i % len(held)] for i in taken if held]
    )
    assume(tokenize(query))
    assume(unicodedata.normalize("NFKC", query) == unicodedata.normalize("NFC", query))
    assume(not unseen_stemmed_words(query, titles, texts))
    path = tmp_path_factory.mktemp("parity") / "index.duckdb"
    with VectorStore(path, backend="hashing:64") as store:
        store.add_texts(texts, titles=titles, ids=[f"c{i:02d}" for i in range(len(texts))])
    with VectorStore(path, read_only=True) as store:
        sdk = [(hit.chunk.chunk_id, hit.score) for hit in store.query_text(query, top_k)]
        sql = sql_ranking(store, query, top_k)
    assert [chunk_id for chunk_id, _ in sql] == [chunk_id for chunk_id, _ in sdk]
    assert [score for _, score in sql] == pytest.approx([score for _, score in sdk], rel=1e-5)


# Inflected words of German and English (their forms differ by language), and words both have.
TWO_LANGUAGES = [
    "Verteidigung", "verteidigenden", "Punkte", "Punkten", "Spiel", "Spiele", "spielen",
    "Mannschaften", "Mannschaft", "sollte", "Daten", "Tabellen", "Tabelle", "Straße", "über",
    "defending", "defended", "points", "playing", "plays", "teams", "tables", "running", "Team",
]  # fmt: skip
bilingual_words = st.sampled_from(TWO_LANGUAGES) | st.text(st.sampled_from(LETTERS), max_size=6)
LIBRARY_LANGUAGES = {"de": "german", "en": "english"}


def two_language_index(path: Path, texts: list[tuple[str, str]]) -> Path:
    """An index of ``texts`` (library, text), the libraries of ``LIBRARY_LANGUAGES``, as a
    bundle records them."""
    with VectorStore(path, backend="hashing:64") as store, store.transaction():
        store.record_slice_keys([LIBRARY_KEY])
        store.record_libraries(
            [
                LibraryRecord(name=name, prefix=f"{name}/", language=language)
                for name, language in LIBRARY_LANGUAGES.items()
            ]
        )
        store.add_texts(
            [text for _, text in texts],
            ids=[f"c{i:02d}" for i in range(len(texts))],
            metadatas=[{LIBRARY_KEY: name} for name, _ in texts],
            sources=[f"{name}/{i}.md" for i, (name, _) in enumerate(texts)],
        )
    return path


@pytest.mark.slow
def test_the_oldest_duckdb_searches_libraries_of_two_languages(
    oldest: Path, tmp_path: Path
) -> None:
    texts = [
        ("de", "Die Verteidigung gab nur 308 Punkte ab"),
        ("de", "die verteidigenden Champions"),
        ("en", "the defending champions scored points"),
    ]
    path = two_language_index(tmp_path / "index.duckdb", texts)
    for query, scoped, found in [
        ("verteidigenden", "{'library': 'de'}", ["c00", "c01"]),
        ("verteidigenden", "{'library': 'en'}", []),
        ("verteidigenden defending", "NULL", ["c00", "c01", "c02"]),
    ]:
        sql = f"SELECT chunk_id FROM search_text('{query}', slice := {scoped})"
        assert sorted(row["chunk_id"] for row in cli(oldest, path, sql)) == found
        library = json.loads(scoped.replace("'", '"')) if scoped != "NULL" else None
        assert sorted(sdk_ids(path, query, 5, filter=library)) == found


def unseen_forms(query: str, held: dict[str, list[str]], languages: list[str]) -> bool:
    """Whether the query has a word that chunks of one of ``languages`` (``held``: each
    language's texts) never held, whose form in it differs from it and either is an index
    term: the SDK's form and SQL's word as written may then find different chunks."""
    terms = {
        term for lang, texts in held.items() for t in texts for term in index_terms(None, t, lang)
    }
    for language in languages:
        words = {word for text in held[language] for word in index_words(None, text)}
        for word, form in zip(tokenize(query), word_forms(tokenize(query), language), strict=True):
            if word not in words and form != word and (form in terms or word in terms):
                return True
    return False


@pytest.mark.slow
@settings(
    max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    texts=st.lists(
        st.tuples(st.sampled_from(sorted(LIBRARY_LANGUAGES)), texts_of(10).filter(str.strip)),
        min_size=1,
        max_size=10,
    ),
    query_words=st.lists(
        bilingual_words | st.sampled_from(sorted(QUESTION_WORDS)), min_size=1, max_size=4
    ),
    taken=st.lists(st.integers(0, 10_000), max_size=3),
    library=st.sampled_from([None, "de", "en"]),
    case=st.sampled_from([str, str.upper, str.title]),
    top_k=st.integers(1, 12),
)
@example(
    texts=[("de", "Verteidigung Punkte"), ("de", "verteidigenden"), ("en", "defending points")],
    query_words=["verteidigenden", "points"],
    taken=[],
    library=None,
    case=str,
    top_k=5,
)
def test_search_text_ranks_a_library_of_each_language_as_the_sdk_does(
    tmp_path_factory, texts, query_words, taken, library, case, top_k
) -> None:
    """A German and an English library in one index: SQL looks a query word up in the word
    forms of the languages of the libraries searched, as the SDK stems it in each."""
    held_words = [word for _, text in texts for word in text.split()]
    query = " ".join(
        case(word) for word in query_words + [held_words[i % len(held_words)] for i in taken]
    )
    assume(tokenize(query))
    assume(unicodedata.normalize("NFKC", query) == unicodedata.normalize("NFC", query))
    held = {
        language: [text for name, text in texts if LIBRARY_LANGUAGES[name] == language]
        for language in LIBRARY_LANGUAGES.values()
    }
    searched = {name for name, _ in texts if library in (None, name)}
    languages = sorted({LIBRARY_LANGUAGES[name] for name in searched}) or ["english"]
    assume(not unseen_forms(query, held, languages))
    path = two_language_index(tmp_path_factory.mktemp("languages") / "index.duckdb", texts)
    with VectorStore(path, read_only=True) as store:
        assert store.languages.several == any(name == "de" for name, _ in texts)
        scoped = {LIBRARY_KEY: library} if library else None
        sdk = [
            (hit.chunk.chunk_id, hit.score) for hit in store.query_text(query, top_k, filter=scoped)
        ]
        sql = store.connection.execute(
            "SELECT chunk_id, score FROM search_text(?, k := ?, slice := ?)",
            [query, top_k, scoped],
        ).fetchall()
    assert [chunk_id for chunk_id, _ in sql] == [chunk_id for chunk_id, _ in sdk]
    assert [score for _, score in sql] == pytest.approx([score for _, score in sdk], rel=1e-5)


def test_every_character_case_folded_apart_from_its_lower_case_is_in_the_bmp() -> None:
    """The macro folds case as Python does from a table of the Basic Multilingual Plane only."""
    assert case_folds() == case_folds(0x10FFFF)
