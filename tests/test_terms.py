"""BM25's terms: codes as written, words by their word form, the title as a weighted field,
a question's conversational words, and the index's language."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from duckdb_vectors import IndexMismatchError, InvalidSettingError, VectorStore
from duckdb_vectors.index.terms import index_terms, parse_query
from duckdb_vectors.tokenizer import tokenize

GUIDES = {
    "register": ("Models", "Register a model before serving it; a registered model has a version."),
    "metrics": ("Monitoring and Logging Metrics", "Report a metric at every training step."),
    "errors": ("Errors", "E408 means the request timed out; SQLSTATE 22P02 is a bad cast."),
    "csv": ("Reading CSV", "read_csv_auto detects the dialect of a CSV file."),
    "chatty": ("FAQ", "How do I ask? What can I do? Can I, how would I, should I?"),
    "mentions": ("Tuning", "Tuning also logs a few metrics, as training does."),
}


@pytest.fixture
def guides(tmp_path: Path) -> VectorStore:
    with VectorStore(tmp_path / "guides.duckdb", "hashing") as store:
        store.add_texts(
            [text for _, text in GUIDES.values()],
            ids=list(GUIDES),
            titles=[title for title, _ in GUIDES.values()],
        )
        yield store


def best(store: VectorStore, query: str) -> str:
    return store.query_text(query, top_k=1)[0].chunk.chunk_id


def query_terms(text: str) -> list[str]:
    return parse_query(text).terms(["english"])


def test_a_word_is_indexed_as_its_word_form() -> None:
    assert query_terms("registering metrics") == ["regist", "metric"]
    assert query_terms("register metric") == ["regist", "metric"]


@pytest.mark.parametrize("code", ["E408", "read_csv_auto", "22P02", "v2.0", "2023"])
def test_codes_and_identifiers_are_terms_as_written(code: str) -> None:
    query = parse_query(code)
    terms = query.terms(["english"])
    assert terms == query.all_terms(["english"]) == tokenize(code) == [t.casefold() for t in terms]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("registering", "register"),  # another form of the word
        ("logging custom metrics", "metrics"),
        ("E408", "errors"),  # codes exactly
        ("SQLSTATE 22P02", "errors"),
        ("read_csv_auto", "csv"),
    ],
)
def test_inflections_and_codes_are_found(guides: VectorStore, query: str, expected: str) -> None:
    assert best(guides, query) == expected


def test_another_word_that_only_starts_alike_is_not_a_form(tmp_path: Path) -> None:
    with VectorStore(tmp_path / "forms.duckdb", "hashing") as store:
        store.add_texts(["the runner is ready", "the runs are ready"], ids=["runner", "runs"])
        hits = store.query_text("running", top_k=2)
    assert [hit.chunk.chunk_id for hit in hits] == ["runs"]  # "runner" is not a form of "run"


def test_a_title_counts_more_than_a_mention_in_the_text(guides: VectorStore) -> None:
    assert best(guides, "metrics") == "metrics"  # in its title, against "mentions"' text
    title, text = GUIDES["metrics"]
    assert index_terms(title, text).count("metric") == 3  # twice the title's, once the text's


def test_conversational_words_do_not_drown_the_content_words(guides: VectorStore) -> None:
    assert best(guides, "ok but how do I register a model?") == "register"
    assert query_terms("how do I register?") == ["regist"]
    assert query_terms("how do I") == ["how", "do", "i"]  # nothing else: kept
    assert parse_query("how do I register?").all_terms(["english"]) == ["how", "do", "i", "regist"]


def test_a_query_s_terms_are_each_looked_up_once() -> None:
    query = parse_query("metrics, metric and METRICS")
    assert (query.terms(["english"]), query.all_terms(["english"])) == (
        ["metric"],
        ["metric", "and"],
    )


def test_a_query_word_is_its_forms_in_each_language_searched() -> None:
    """Libraries of several languages (a bundle's): a word is looked up in the forms of those a
    search covers, and ``match="all"`` wants one of them for each word."""
    query = parse_query("how are the Mannschaften playing?")
    assert query.terms(["english"]) == ["mannschaften", "play"]
    assert query.terms(["german"]) == ["mannschaft", "playing"]
    assert query.terms(["english", "german"]) == ["mannschaften", "mannschaft", "play", "playing"]
    assert query.required(["english", "german"])[-2:] == [
        ["mannschaften", "mannschaft"],
        ["play", "playing"],
    ]


def test_each_alphabet_is_stemmed_by_its_own_language_and_ngram_scripts_stay_exact() -> None:
    assert query_terms("базы") == query_terms("базой")  # Russian
    assert query_terms("数据库 데이터베이스를") == tokenize("数据库 데이터베이스를")


def test_the_language_is_recorded_and_kept_after_reopen(tmp_path: Path) -> None:
    path = tmp_path / "de.duckdb"
    with VectorStore(path, "hashing", language="german") as store:
        store.add_texts(["Die Häuser stehen am Fluss."], ids=["haus"])
        assert store.manifest is not None and store.manifest.language == "german"
    with VectorStore(path, read_only=True) as store:
        assert store.language == "german"
        assert [hit.chunk.chunk_id for hit in store.query_text("Haus")] == ["haus"]


def test_another_language_re_tokenizes_read_write_and_is_refused_read_only(
    tmp_path: Path,
) -> None:
    path = tmp_path / "en.duckdb"
    with VectorStore(path, "hashing") as store:
        store.add_texts(["Die Häuser stehen am Fluss."], ids=["haus"])
        assert store.query_text("Haus") == []  # English word forms: "häuser" stays
    with pytest.raises(IndexMismatchError, match="--language german"):
        VectorStore(path, read_only=True, language="german")
    upgraded = run_cli("upgrade", "--db", str(path), "--language", "german")
    assert upgraded.exit_code == 0, upgraded.stderr
    assert "(german)" in upgraded.stdout
    with VectorStore(path, read_only=True) as store:
        assert [hit.chunk.chunk_id for hit in store.query_text("Haus")] == ["haus"]


def test_a_language_without_a_stemmer_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidSettingError, match="'klingon' has no stemmer"):
        VectorStore(tmp_path / "x.duckdb", "hashing", language="klingon")
    result = run_cli("index", str(tmp_path), "--db", str(tmp_path / "y.duckdb"), "--language", "x")
    assert result.exit_code == 2 and "has no stemmer" in result.stderr
    assert not (tmp_path / "y.duckdb").exists()


def test_an_index_run_in_another_language_says_it_re_tokenized(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Indexing\n\nRegistering a folder indexes it.\n")
    db = str(tmp_path / "docs.duckdb")
    assert run_cli("index", str(docs), "--db", db).exit_code == 0
    again = run_cli("index", str(docs), "--db", db, "--language", "german", "--json")
    assert again.exit_code == 0, again.stderr
    summary = json.loads(again.stdout)
    assert (summary["chunks_retokenized"], summary["retokenized"]) == (1, "english -> german")
    assert (summary["files_unchanged"], summary["chunks_embedded"]) == (1, 0)
    text = run_cli("index", str(docs), "--db", db, "--language", "english")
    assert "tokens  1 chunks re-tokenized for BM25 (german -> english)" in text.stdout
