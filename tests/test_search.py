"""How a search is answered: exact vector ranking, BM25 over word forms, fusion, scoping."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import bm25s
import numpy as np
import pytest
from conftest import DEFAULT_BACKEND, EVALDATA, STATIC_MODEL

from duckdb_vectors import FusionSettings, InvalidRankingSQLError, VectorStore
from duckdb_vectors.bm25 import BM25_B, BM25_K1
from duckdb_vectors.index import chunk_table
from duckdb_vectors.index.db import SCAN_MEMORY_LIMIT, scalar
from duckdb_vectors.index.terms import index_terms, parse_query
from duckdb_vectors.search import memory_index
from duckdb_vectors.search.answer import Scope, SqlSearcher
from duckdb_vectors.search.memory_index import MemoryIndex
from duckdb_vectors.search.ranking import Ranking, fuse
from duckdb_vectors.tokenizer import tokenize

SCIFACT = EVALDATA / "ir" / "scifact"


def scifact_documents(limit: int) -> list[dict[str, str]]:
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt") as handle:
        return [json.loads(line) for _, line in zip(range(limit), handle, strict=False)]


@pytest.fixture(scope="module")
def scifact_store(tmp_path_factory: pytest.TempPathFactory) -> VectorStore:
    """600 real SciFact abstracts, each with a year in its metadata."""
    path = tmp_path_factory.mktemp("scifact") / "scifact.duckdb"
    documents = scifact_documents(600)
    store = VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL)
    store.add_texts(
        ids=[d["_id"] for d in documents],
        texts=[d["text"] for d in documents],
        titles=[d["title"] for d in documents],
        metadatas=[{"year": 2000 + i % 25, "odd": i % 2 == 1} for i in range(len(documents))],
    )
    return store


QUERIES = [
    "vitamin D deficiency and cancer risk",
    "mitochondrial DNA mutations",
    "the role of T cells in autoimmune disease",
    "COVID-19",
    "p53",
]


def searchers(store: VectorStore) -> tuple[MemoryIndex, SqlSearcher]:
    """The in-memory snapshot and SQL."""
    memory = MemoryIndex.load(store.connection, store.slice_keys, store.languages)
    return memory, SqlSearcher(store.connection, 256, store.slice_keys, store.languages)


@pytest.mark.slow
@pytest.mark.parametrize(
    "scope",
    [
        Scope(),
        Scope(filter={"odd": True}),
        Scope(where="json_extract(metadata, '$.year')::INT < 2010"),
    ],
)
def test_memory_and_sql_searchers_rank_identically(scifact_store: VectorStore, scope) -> None:
    memory, sql = searchers(scifact_store)
    for query in QUERIES:
        vector = scifact_store.embedder.embed_query([query])[0]
        terms = tokenize(query)
        for rank in ("vector_ranking", "lexical_ranking"):
            argument = vector if rank == "vector_ranking" else terms
            from_memory = getattr(memory, rank)(argument, 20, scope)
            from_sql = getattr(sql, rank)(argument, 20, scope)
            assert list(from_memory.keys) == list(from_sql.keys), (query, rank)
            assert np.allclose(from_memory.scores, from_sql.scores, rtol=1e-4, atol=1e-5)


def test_the_snapshot_reads_a_filter_once_and_a_where_each_time(
    scifact_store: VectorStore,
) -> None:
    memory, sql = searchers(scifact_store)
    query = scifact_store.embedder.embed_query(["mitochondrial DNA"])[0]
    filtered, where = Scope(filter={"odd": True}), Scope(where="key % 2 = 0")
    for _ in range(2):  # the second time from the rows held
        for scope in (filtered, where):
            assert list(memory.vector_ranking(query, 10, scope).keys) == list(
                sql.vector_ranking(query, 10, scope).keys
            )
    assert list(memory.filter_rows.held) == ['{"odd": true}']
    for year in range(1990, 2030):  # what is held stays within its bound
        memory.vector_ranking(query, 10, Scope(filter={"year": {"$gte": year}}))
    assert 0 < memory.filter_rows.held_rows <= memory_index.FILTER_ROWS_HELD * len(memory)


def test_vector_ranking_is_exact_brute_force(scifact_store: VectorStore) -> None:
    stored = scifact_store.list_vectors(limit=1000, return_data=True).vectors
    matrix = np.array([chunk.embedding for chunk in stored], dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = scifact_store.embedder.embed_query(["vitamin D deficiency"])[0]
    expected = [stored[i].chunk_id for i in np.argsort(-(matrix @ query))[:25]]
    hits = scifact_store.query_vectors(query, top_k=25)
    assert [hit.chunk.chunk_id for hit in hits] == expected


@pytest.mark.slow
def test_bm25_scores_agree_with_bm25s_on_the_same_tokens(scifact_store: VectorStore) -> None:
    documents = scifact_documents(600)
    corpus = [index_terms(d["title"], d["text"]) for d in documents]
    reference = bm25s.BM25(method="lucene", k1=BM25_K1, b=BM25_B)
    reference.index(corpus, show_progress=False)
    memory, sql = searchers(scifact_store)
    id_of_key = dict(
        scifact_store.connection.execute("SELECT key, chunk_id FROM chunks").fetchall()
    )
    position = {d["_id"]: i for i, d in enumerate(documents)}
    for query in QUERIES:
        terms = parse_query(query).terms(["english"])
        expected = reference.get_scores(terms)
        for searcher in (memory, sql):
            ranking = searcher.lexical_ranking(terms, 50, Scope())
            assert len(ranking) > 0
            got = np.array([expected[position[id_of_key[int(k)]]] for k in ranking.keys])
            assert np.allclose(ranking.scores, got, rtol=1e-4), query


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("E1234", "doc:2"),
        ("S3", "doc:2"),
        ("v2.0", "doc:3"),
        ("array_cosine_distance", "doc:3"),
        ("Москва", "doc:4"),
        ("Αθήνα", "doc:5"),
        ("首都", "doc:6"),  # Chinese has no spaces: the word is found inside the sentence
        ("政治", "doc:6"),
        ("データベース", "doc:7"),
    ],
)
def test_exact_tokens_and_non_latin_words_are_found(filled_store, query, expected) -> None:
    hits = filled_store.query(query, top_k=3)
    lexical = [hit for hit in hits if hit.text_rank == 1]
    assert lexical and lexical[0].chunk.chunk_id == expected


@pytest.mark.slow
def test_filter_scopes_results(filled_store: VectorStore) -> None:
    hits = filled_store.query("database", top_k=10, filter={"kind": "intro"})
    assert {hit.chunk.chunk_id for hit in hits} == {"doc:0", "doc:1"}
    hits = filled_store.query("database", top_k=10, filter={"year": {"$gte": 2023}})
    assert {hit.chunk.metadata["year"] for hit in hits} <= {2023, 2024, 2025}
    hits = filled_store.query("database", top_k=10, filter={"tags": {"$in": ["n3", "n5"]}})
    assert {hit.chunk.chunk_id for hit in hits} == {"doc:3", "doc:5"}


def test_where_scopes_candidates_with_sql(filled_store: VectorStore) -> None:
    hits = filled_store.query("database", top_k=10, where="source = 'docs/0.md'")
    assert {hit.chunk.chunk_id for hit in hits} == {"doc:0", "doc:1"}


def test_rescore_reweights_the_fused_score(filled_store: VectorStore) -> None:
    plain = filled_store.query("database", top_k=3)
    boosted = filled_store.query(
        "database",
        top_k=3,
        rescore="score * CASE WHEN chunk_id = 'doc:7' THEN 100 ELSE 1 END",
    )
    assert boosted[0].chunk.chunk_id == "doc:7"
    assert plain[0].chunk.chunk_id != "doc:7"


def test_rescore_decays_by_age_from_metadata(filled_store: VectorStore) -> None:
    newest_first = filled_store.query(
        "database",
        top_k=8,
        rescore="score * exp(-(2026 - CAST(metadata->>'$.year' AS INTEGER)) / 2.0)",
    )
    years = [hit.chunk.metadata["year"] for hit in newest_first[:3]]
    assert max(years) >= 2024


@pytest.mark.parametrize(
    "fragment",
    [
        "1); DROP TABLE chunks; --",
        "true; DELETE FROM chunks",
        "(SELECT count(*) FROM read_csv('/etc/passwd')) > 0",
        "(SELECT 1 FROM query('DROP TABLE chunks')) = 1",
        "text = 'a' /* comment */",
        "score +",
    ],
)
def test_injected_sql_that_is_not_one_expression_is_refused(filled_store, fragment) -> None:
    with pytest.raises(InvalidRankingSQLError):
        filled_store.query("database", where=fragment)
    with pytest.raises(InvalidRankingSQLError):
        filled_store.query("database", rescore=fragment)
    assert filled_store.count() == 8


def test_ranking_sql_cannot_reach_files(filled_store: VectorStore) -> None:
    with pytest.raises(InvalidRankingSQLError):
        filled_store.query("database", where="length(read_text('/etc/passwd')) > 0")


def test_ranking_sql_errors_are_one_line(filled_store: VectorStore) -> None:
    with pytest.raises(InvalidRankingSQLError, match="no_such_column") as caught:
        filled_store.query("database", where="no_such_column = 1")
    assert "\n" not in str(caught.value)


MATCH_TEXTS = [
    "Retries use exponential backoff with jitter.",
    "Retries happen three times.",
    "Backoff doubles the wait between attempts.",
    "Jitter spreads the load of many clients.",
]


@pytest.mark.parametrize("memory_index", [True, False])
def test_match_all_keeps_only_chunks_with_every_term_or_falls_back(
    db_path: Path, memory_index: bool
) -> None:
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(
            MATCH_TEXTS,
            ids=["all", "retries", "backoff", "jitter"],
            metadatas=[{"kind": "a"}, {"kind": "b"}, {"kind": "b"}, {"kind": "b"}],
        )
    with VectorStore(
        db_path, model_path=STATIC_MODEL, read_only=True, memory_index=memory_index
    ) as store:
        anywhere = store.query("retries backoff jitter", 4)
        assert anywhere.match == "any" and len(anywhere) == 4
        every = store.query("retries backoff jitter", 4, match="all")
        assert every.match == "all" and [hit.chunk.chunk_id for hit in every] == ["all"]
        by_text = store.query_text("backoff retries", 4, match="all")
        assert [hit.chunk.chunk_id for hit in by_text] == ["all"]
        # The filter scopes which chunks may have every term: in kind "b" none has.
        scoped = store.query("retries backoff jitter", 4, match="all", filter={"kind": "b"})
        assert scoped.match == "any (no chunk has every term)"
        assert {hit.chunk.chunk_id for hit in scoped} == {"retries", "backoff", "jitter"}
        # No chunk has "postgres": the answer is the default one, and says so.
        missing = store.query("retries postgres", 4, match="all")
        assert missing.match == "any (no chunk has every term)"
        default = store.query("retries postgres", 4)
        assert [h.chunk.chunk_id for h in missing] == [h.chunk.chunk_id for h in default]
        with pytest.raises(ValueError, match="match must be one of any, all, got 'most'"):
            store.query("x", match="most")  # type: ignore[arg-type]


@pytest.mark.slow
def test_sql_and_memory_paths_give_the_same_results_through_the_store(db_path: Path) -> None:
    documents = scifact_documents(200)
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(
            [d["text"] for d in documents],
            ids=[d["_id"] for d in documents],
            metadatas=[{"n": i, "tags": ["a"]} if i % 2 else {} for i in range(len(documents))],
        )
    answers = []
    for in_memory in (True, False):
        with VectorStore(
            db_path, model_path=STATIC_MODEL, read_only=True, memory_index=in_memory
        ) as store:
            answers.append(
                [
                    (h.chunk, h.vector_rank, h.text_rank)
                    for query in QUERIES
                    for h in store.query(query, top_k=10)
                ]
            )
    assert answers[0] == answers[1]
    assert any(chunk.metadata for chunk, _, _ in answers[0])
    assert any(not chunk.metadata for chunk, _, _ in answers[0])


def test_rrf_puts_agreement_first_and_reports_ranks() -> None:
    vector = Ranking(np.array([1, 2, 3]), np.array([0.9, 0.8, 0.7]))
    lexical = Ranking(np.array([3, 4]), np.array([7.0, 2.0]))
    fused = fuse(vector, lexical, FusionSettings(method="rrf", rrf_k=60, lexical_weight=0.5))
    assert fused.keys[0] == 3  # the only chunk both signals returned
    assert dict(zip(fused.keys, fused.vector_ranks, strict=True)) == {1: 1, 2: 2, 3: 3, 4: 0}
    assert dict(zip(fused.keys, fused.text_ranks, strict=True)) == {1: 0, 2: 0, 3: 1, 4: 2}
    assert fused.scores[0] == pytest.approx(0.5 / 63 + 0.5 / 61)


def test_relative_score_fusion_divides_each_signal_by_its_best() -> None:
    vector = Ranking(np.array([1, 2]), np.array([0.8, 0.4]))
    lexical = Ranking(np.array([2, 3]), np.array([10.0, 4.0]))
    fused = fuse(vector, lexical, FusionSettings(method="relative", lexical_weight=0.5))
    scores = dict(zip(fused.keys, fused.scores, strict=True))
    # chunk 1: vector 1.0, no BM25 -> 0; chunk 3: not a vector candidate -> vector's lowest 0.5
    assert scores == pytest.approx({1: 0.5, 2: 0.75, 3: 0.45})
    assert list(fused.keys) == [2, 1, 3]


def test_an_identifiers_only_match_tops_the_hybrid_list(filled_store: VectorStore) -> None:
    """BM25 finds one chunk: the others must not count as perfect BM25 matches too."""
    hits = filled_store.query("E1234", top_k=3)
    assert hits[0].chunk.chunk_id == "doc:2" and hits[0].text_rank == 1


def test_lexical_weight_zero_is_vector_order(scifact_store: VectorStore) -> None:
    vector_only = [
        h.chunk.chunk_id for h in scifact_store.query("p53 tumour", top_k=5, hybrid=False)
    ]
    scifact_store.settings.fusion = FusionSettings(lexical_weight=0.0)
    try:
        fused = [h.chunk.chunk_id for h in scifact_store.query("p53 tumour", top_k=5)]
    finally:
        scifact_store.settings.fusion = FusionSettings()
    assert fused == vector_only


def test_the_readme_ranking_sql_examples(store: VectorStore) -> None:
    store.add_texts(
        ids=["old-en", "new-en", "new-de", "blog"],
        texts=["release notes for install on linux"] * 3 + ["install on linux, a blog post"],
        sources=["guides/old.md", "guides/new.md", "guides/neu.md", "blog/post.md"],
        metadatas=[
            {"lang": "en", "updated": "2020-01-01"},
            {"lang": "en", "updated": "2026-11-01"},
            {"lang": "de", "updated": "2026-11-01"},
            {"lang": "en", "updated": "2026-11-01"},
        ],
    )
    scoped = store.query(
        "install on linux", where="source LIKE 'guides/%' AND metadata->>'$.lang' = 'en'"
    )
    assert {hit.chunk.chunk_id for hit in scoped} == {"old-en", "new-en"}
    recent_first = store.query(
        "release notes",
        rescore="score * pow(0.5, date_diff('day', CAST(metadata->>'$.updated' AS DATE), "
        "current_date) / 90.0)",
    )
    ranked = [hit.chunk.chunk_id for hit in recent_first]
    assert ranked.index("new-en") < ranked.index("old-en")
    assert recent_first[-1].chunk.chunk_id == "old-en"  # six years old: decayed to the bottom


@pytest.mark.slow
@pytest.mark.parametrize("resident_rows", [True, False])
@pytest.mark.parametrize("rewritten", [False, True], ids=["consecutive", "rewritten"])
def test_a_snapshot_ranks_like_sql_whatever_order_keys_and_rows_are_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resident_rows: bool, rewritten: bool
) -> None:
    """Chunks written once (consecutive keys) or rewritten (their keys now sparse), tables
    stored out of key and term order, as another writer could leave them, rows held or read
    per query: the in-memory snapshot still answers exactly as SQL does."""
    monkeypatch.setattr(memory_index, "RESIDENT_ROWS_LIMIT", 10_000 if resident_rows else 0)
    monkeypatch.setattr(memory_index, "ROWS_PER_READ", 7)  # rows held are read in many parts
    documents = scifact_documents(120)
    store = VectorStore(tmp_path / "x.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL)
    ids = [d["_id"] for d in documents]
    for edition in range(3 if rewritten else 1):  # a rewrite gives new keys
        texts = [
            d["text"] + (f" edition {edition}" if i % 2 else "") for i, d in enumerate(documents)
        ]
        store.add_texts(texts, ids=ids, titles=[d["title"] for d in documents])
    span, count = store.connection.execute(
        "SELECT max(key) - min(key) + 1, count(*) FROM chunks"
    ).fetchall()[0]
    assert (span == count) != rewritten
    for table, order in (("chunks", "key DESC"), ("postings", "key DESC, term_id")):
        store.connection.execute(f"CREATE TABLE shuffled AS FROM {table} ORDER BY {order}")
        store.connection.execute(f"DROP TABLE {table}")
        store.connection.execute(f"ALTER TABLE shuffled RENAME TO {table}")
    memory, sql = searchers(store)
    assert (memory.rows is not None) == resident_rows
    for query in QUERIES:
        vector = store.embedder.embed_query([query])[0]
        for rank, argument in (("vector_ranking", vector), ("lexical_ranking", tokenize(query))):
            from_memory = getattr(memory, rank)(argument, 10, Scope())
            from_sql = getattr(sql, rank)(argument, 10, Scope())
            assert list(from_memory.keys) == list(from_sql.keys), (query, rank)
            assert np.allclose(from_memory.scores, from_sql.scores, rtol=1e-4, atol=1e-5)
            assert memory.chunks(from_memory.keys) == sql.chunks(from_sql.keys)
    assert memory.chunks(memory.keys) == sql.chunks(memory.keys)
    store.close()


ROW_TEXTS = [
    "plain ASCII text",
    "Москва — столица России",
    "数据库的会社",
    "café naïve résumé 😀",
    "",
    "a\x00NUL and a\ttab",
]


def test_held_rows_give_back_the_chunks_and_documents_duckdb_reads(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the scripts, the NULLs, the metadata and the number of reads they took."""
    monkeypatch.setattr(memory_index, "ROWS_PER_READ", 3)  # read in several parts
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(
            ROW_TEXTS,
            ids=[f"id-{i}-é" for i in range(len(ROW_TEXTS))],
            metadatas=[{"n": i, "tags": ["a", "ß"]} if i % 2 else None for i in range(6)],
            titles=["Заголовок", None, "t", None, "t", None],
            sources=["a.md", "a.md", None, "数据.md", None, "a.md"],
            positions=[0, 1, None, 3, None, 5],
        )
        store.add_texts(["a later write"], ids=["later"], sources=["a.md"])
        memory = MemoryIndex.load(store.connection, store.slice_keys, store.languages)
        assert memory.rows is not None
        keys = memory.keys[::-1]
        expected = chunk_table.by_keys(store.connection, keys)
        assert memory.chunks(keys) == expected and len(expected) == len(ROW_TEXTS) + 1
        assert [list(chunk.__dict__) for chunk in memory.chunks(keys)] == [
            list(chunk.__dict__) for chunk in expected
        ]
        assert memory.documents(keys) == chunk_table.documents_of(store.connection, keys)


@pytest.mark.slow
def test_a_sql_vector_ranking_leaves_duckdbs_cache_small(tmp_path: Path) -> None:
    """A one-shot search reads every vector once: DuckDB's buffer pool stays at the scan limit
    (it kept all of them, 1.1 GB at 1M chunks, and answered slower), and its setting returns."""
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((40_000, 256)).astype(np.float32)  # 41 MB of vectors
    store = VectorStore(tmp_path / "x.duckdb", "hashing:256", memory_index=False)
    store.put_vectors(
        [{"key": f"v{i}", "data": {"float32": row}} for i, row in enumerate(vectors.tolist())]
    )
    store.close()
    store = VectorStore(tmp_path / "x.duckdb", "hashing:256", read_only=True, memory_index=False)
    connection = store.connection

    def cached_bytes() -> int:
        return scalar(connection, "SELECT sum(memory_usage_bytes) FROM duckdb_memory()")

    limit = scalar(connection, "SELECT current_setting('memory_limit')")
    searcher = SqlSearcher(connection, 256, store.slice_keys, store.languages)
    assert searcher.scan_pool_held_small  # 41 MB of vectors; a 5k-chunk index's stay cached
    ranking = searcher.vector_ranking(vectors[7], 3, Scope())
    found = scalar(connection, "SELECT chunk_id FROM chunks WHERE key = ?", [int(ranking.keys[0])])
    assert found == "v7"
    assert cached_bytes() <= SCAN_MEMORY_LIMIT
    assert scalar(connection, "SELECT current_setting('memory_limit')") == limit
    # The same scan with DuckDB's own limit keeps what it read: the check above can fail.
    connection.sql(
        "SELECT max(array_cosine_similarity(embedding, embedding)) FROM chunks"
    ).fetchall()
    assert cached_bytes() > 2 * SCAN_MEMORY_LIMIT
    store.close()


@pytest.mark.slow
def test_a_filtered_sql_vector_ranking_past_the_scan_limit_is_answered(tmp_path: Path) -> None:
    """A filter on metadata (a library's, say) needs working memory beside the vectors the
    one-shot scan streams: the scan's small pool must leave room for it."""
    vectors = np.random.default_rng(7).standard_normal((20_000, 256)).astype(np.float32)
    store = VectorStore(tmp_path / "x.duckdb", "hashing:256", memory_index=False)
    store.put_vectors(
        [
            {
                "key": f"v{i}",
                "data": {"float32": row},
                # as a bundle stamps a page's chunks, with its front matter (~180 characters)
                "metadata": {
                    "library": f"lib{i % 20}",
                    "version": "1.0",
                    "title": f"Page {i // 8} of the reference, with a long title",
                    "redirect_from": [f"/docs/old/page-{i // 8}", f"/docs/stable/page-{i // 8}"],
                    "url": f"https://docs.example.com/lib{i % 20}/reference/page-{i // 8}.html",
                },
            }
            for i, row in enumerate(vectors.tolist())
        ]
    )
    searcher = SqlSearcher(store.connection, 256, store.slice_keys, store.languages)
    assert searcher.scan_pool_held_small
    ranking = searcher.vector_ranking(vectors[21], 3, Scope(filter={"library": "lib1"}))
    found = scalar(
        store.connection, "SELECT chunk_id FROM chunks WHERE key = ?", [int(ranking.keys[0])]
    )
    assert found == "v21"
    store.close()


def test_a_small_index_keeps_its_vectors_in_duckdbs_cache(tmp_path: Path) -> None:
    """Vectors smaller than the scan's pool are cached as DuckDB would: no statements spent
    holding the pool small on each query."""
    vectors = np.random.default_rng(6).standard_normal((2_000, 256)).astype(np.float32)
    store = VectorStore(tmp_path / "x.duckdb", "hashing:256", memory_index=False)
    store.put_vectors([{"key": f"v{i}", "data": {"float32": row}} for i, row in enumerate(vectors)])
    searcher = SqlSearcher(store.connection, 256, store.slice_keys, store.languages)
    assert not searcher.scan_pool_held_small
    assert len(searcher.vector_ranking(vectors[3], 3, Scope()).keys) == 3
    store.close()
