"""A bundle whose libraries are in different languages: each library's words are indexed in
its own Snowball language (``language:`` in its entry), and found by their inflected forms in
the SDK, the CLI, MCP and plain SQL, one library at a time and across them.

The pages are real text: the first XQuAD-R paragraphs (Wikipedia, about Super Bowl 50), in
German for one library and in English for the other.
"""

from __future__ import annotations

import gzip
import json
from itertools import islice
from pathlib import Path

import anyio
import duckdb
import pytest
from conftest import EVALDATA, SCRIPT, STATIC_MODEL, run_cli
from mcp import Client, StdioServerParameters

from duckdb_vectors import VectorStore
from duckdb_vectors.bundle import Bundle, index_bundle
from duckdb_vectors.libraries import listed, scope
from duckdb_vectors.models import SearchResults

PARAGRAPHS = 4  # of each language: a00p0 to a00p3
BUNDLE = """\
libraries:
  - name: fussball
    source: de
    language: german
    description: Der Super Bowl 50, auf Deutsch
  - name: football
    source: en
    description: Super Bowl 50, in English
"""
# "Verteidigungen" occurs in no page: its German form is that of "Verteidigung" (a00p0) and of
# "verteidigenden" (a00p1). Read as English words they are three words apart.
UNSEEN_GERMAN = "Verteidigungen"
GERMAN_PAGES = ["fussball/a00p0.md", "fussball/a00p1.md"]
# "defended": the English form of "defending" (a00p1).
ENGLISH_WORD, ENGLISH_PAGES = "defended", ["football/a00p1.md"]


def write_paragraphs(folder: Path, language: str) -> None:
    """The first ``PARAGRAPHS`` XQuAD-R paragraphs of ``language`` ("de", "en") as pages."""
    folder.mkdir()
    with gzip.open(EVALDATA / "ir" / "xquad-r-paragraphs" / language / "corpus.jsonl.gz") as rows:
        for line in islice(rows, PARAGRAPHS):
            paragraph = json.loads(line)
            name = paragraph["_id"].split("-", 1)[1]  # de-a00p0: a00p0
            (folder / f"{name}.md").write_text(f"# Super Bowl 50\n\n{paragraph['text']}\n")


@pytest.fixture
def bundle_file(tmp_path: Path) -> Path:
    write_paragraphs(tmp_path / "de", "de")
    write_paragraphs(tmp_path / "en", "en")
    path = tmp_path / "docs.yaml"
    path.write_text(BUNDLE)
    return path


def sources(hits: SearchResults) -> list[str]:
    return sorted(hit.chunk.source or "" for hit in hits)


def test_each_library_is_found_by_the_word_forms_of_its_own_language(
    tmp_path: Path, bundle_file: Path
) -> None:
    db = tmp_path / "docs.duckdb"
    with VectorStore(db, "hashing:64") as store:
        index_bundle(store, Bundle.read(bundle_file))
        assert [(info.name, info.languages) for info in listed(store.manifest)] == [
            ("football", ["english"]),
            ("fussball", ["german"]),
        ]
    for memory_index in (True, False):  # the in-memory index and SQL alike
        with VectorStore(db, read_only=True, memory_index=memory_index) as store:
            german, english = scope(store.manifest, "fussball"), scope(store.manifest, "football")
            assert sources(store.query_text(UNSEEN_GERMAN, 5, filter=german)) == GERMAN_PAGES
            assert sources(store.query_text(ENGLISH_WORD, 5, filter=english)) == ENGLISH_PAGES
            assert store.query_text(UNSEEN_GERMAN, 5, filter=english) == []
            # Across both: each word in the forms of both languages.
            across = store.query_text(f"{UNSEEN_GERMAN} {ENGLISH_WORD}", 5)
            assert sources(across) == sorted(ENGLISH_PAGES + GERMAN_PAGES)
            every = store.query_text("verteidigenden Punkten", 5, match="all")
            assert (every.match, sources(every)) == ("all", GERMAN_PAGES)


def test_a_library_whose_language_changes_is_re_tokenized_alone_and_nothing_is_embedded(
    tmp_path: Path, bundle_file: Path
) -> None:
    english_postings = (
        "SELECT c.chunk_id, t.term, p.tf FROM postings p JOIN terms t USING (term_id)"
        " JOIN chunks c USING (key) WHERE c.source LIKE 'football/%' ORDER BY ALL"
    )
    with VectorStore(tmp_path / "docs.duckdb", "hashing:64") as store:
        index_bundle(store, Bundle.read(bundle_file))
        before = store.connection.execute(english_postings).fetchall()

        bundle_file.write_text(BUNDLE.replace("language: german", "language: english"))
        changed = index_bundle(store, Bundle.read(bundle_file))
        fussball, football = (run.summary for run in changed.libraries)
        assert (fussball.retokenized, fussball.chunks_retokenized) == ("german -> english", 4)
        assert (football.retokenized, football.chunks_retokenized) == (None, 0)
        assert sum(run.summary.chunks_embedded for run in changed.libraries) == 0
        assert store.query_text(UNSEEN_GERMAN, 5, filter=scope(store.manifest, "fussball")) == []
        assert [info.languages for info in listed(store.manifest)] == [["english"], ["english"]]
        assert store.connection.execute(english_postings).fetchall() == before

        bundle_file.write_text(BUNDLE)  # and back
        back = index_bundle(store, Bundle.read(bundle_file))
        assert back.libraries[0].summary.retokenized == "english -> german"
        found = store.query_text(UNSEEN_GERMAN, 5, filter=scope(store.manifest, "fussball"))
        assert sources(found) == GERMAN_PAGES


@pytest.mark.slow
def test_the_cli_sql_and_mcp_search_a_german_library_by_its_word_forms(
    tmp_path: Path, bundle_file: Path
) -> None:
    db = str(tmp_path / "docs.duckdb")
    built = run_cli("index", "--bundle", str(bundle_file), "--db", db)
    assert built.exit_code == 0, built.stderr
    report = run_cli("report", "--db", db)
    assert "fussball (4 pages) in german" in report.stdout
    assert "football (4 pages) in english" in report.stdout
    manifest = json.loads(run_cli("report", "--db", db, "--json").stdout)["manifest"]
    assert [(one["name"], one["language"]) for one in manifest["libraries"]] == [
        ("fussball", "german"),
        ("football", None),  # the index's: english
    ]

    skill = run_cli("skill", "--db", db, "--stdout").stdout
    assert "- Library `fussball`, 4 chunks in german: Der Super Bowl 50, auf Deutsch." in skill
    assert "- Library `football`, 4 chunks: Super Bowl 50, in English." in skill
    assert "word forms match, in english and german:" in skill

    searched = run_cli(
        "search", UNSEEN_GERMAN, "--db", db, "--library", "fussball", "--text-only", "--json"
    )
    assert sorted(hit["source"] for hit in json.loads(searched.stdout)["results"]) == GERMAN_PAGES

    # Plain SQL looks a query word up in the word forms of the languages searched: a word the
    # index holds ("verteidigenden") finds its other forms ("Verteidigung").
    with duckdb.connect(db, read_only=True) as connection:
        scoped = connection.execute(
            "SELECT source FROM search_text('verteidigenden', slice := {'library': 'fussball'})"
        ).fetchall()
        across = connection.execute(
            "SELECT source FROM search_text('verteidigenden defending')"
        ).fetchall()
    assert sorted(source for (source,) in scoped) == GERMAN_PAGES
    assert sorted(source for (source,) in across) == sorted(GERMAN_PAGES + ENGLISH_PAGES)

    parameters = StdioServerParameters(
        command=SCRIPT,
        args=["mcp", "--db", db],
        env={"DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL), "HF_HUB_OFFLINE": "1"},
    )

    async def scenario() -> None:
        async with Client(parameters, mode="legacy", read_timeout_seconds=60) as client:
            listing = await client.call_tool("libraries", {})
            assert "fussball: versions -; 4 chunks in german;" in listing.content[0].text
            versions = [one["versions"][0] for one in listing.structured_content["libraries"]]
            assert [version["language"] for version in versions] == ["english", "german"]
            found = await client.call_tool(
                "search", {"query": UNSEEN_GERMAN, "library": "fussball", "top_k": 4}
            )
            by_words = [h for h in found.structured_content["results"] if h["text_rank"]]
            assert sorted(hit["source"] for hit in by_words) == GERMAN_PAGES

    anyio.run(scenario)


def test_a_bundle_without_languages_of_its_own_ranks_as_before(
    tmp_path: Path, bundle_file: Path
) -> None:
    """Without ``language`` the German pages are read as English words, as every index was."""
    bundle_file.write_text(BUNDLE.replace("    language: german\n", ""))
    with VectorStore(tmp_path / "docs.duckdb", "hashing:64") as store:
        index_bundle(store, Bundle.read(bundle_file))
        assert not store.languages.several
        german = scope(store.manifest, "fussball")
        assert store.query_text(UNSEEN_GERMAN, 5, filter=german) == []
        exact = store.query_text("verteidigenden", 5, filter=german)
        assert sources(exact) == ["fussball/a00p1.md"]
