"""A question the model cannot read: an English model, a question in another script."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DEFAULT_BACKEND, ONNX_MODEL, STATIC_MODEL

from duckdb_vectors import VectorStore, get_embedder
from duckdb_vectors.index.terms import parse_query

MINILM = "fastembed:sentence-transformers/all-MiniLM-L6-v2"
PARAGRAPHS = {
    "moscow": "Москва является столицей России и крупнейшим городом страны.",
    "river": "Волга течёт через центральную Россию и впадает в Каспийское море.",
    "piano": "Рояль стоял в зале, и вечером на нём играли сонаты.",
    "weather": "The weather in spring is mild, with frequent rain in April.",
    "trains": "Night trains connect the capital with the northern cities.",
}


@pytest.fixture(scope="module")
def minilm_store(tmp_path_factory: pytest.TempPathFactory) -> VectorStore:
    path = tmp_path_factory.mktemp("script") / "minilm.duckdb"
    store = VectorStore(path, MINILM, model_path=ONNX_MODEL)
    store.add_texts(list(PARAGRAPHS.values()), ids=list(PARAGRAPHS))
    return store


def test_fastembed_says_which_models_know_only_english() -> None:
    assert get_embedder(MINILM, ONNX_MODEL).english_only()
    assert not get_embedder(DEFAULT_BACKEND, STATIC_MODEL).english_only()  # multilingual


@pytest.mark.parametrize(
    ("text", "latin"),
    [
        ("how do retries work?", True),
        ("Wie funktionieren Wiederholungen?", True),
        ("Какая река впадает в Каспийское море?", False),
        ("What does the λ parameter of ray.tune do?", True),
        ("Кто написал Liber servitoris?", False),  # 15 Latin letters of 25
        ("ray.init() 怎么用", False),  # four Latin letters to three Han
        ("如何使用 ray", False),
        ("42?", True),
    ],
)
def test_a_question_is_mostly_latin_by_its_letters(text: str, latin: bool) -> None:
    assert parse_query(text).mostly_latin is latin


def test_bm25_ranks_a_question_an_english_model_cannot_read(minilm_store: VectorStore) -> None:
    question = "Какая река впадает в Каспийское море?"
    by_text = minilm_store.query_text(question, 5)
    hits = minilm_store.query(question, 5)
    assert [hit.chunk.chunk_id for hit in by_text] == ["river", "piano"]  # "в" matches too
    assert [(hit.chunk.chunk_id, hit.score) for hit in hits[:2]] == [
        (hit.chunk.chunk_id, hit.score)
        for hit in by_text  # BM25's order and scores
    ]
    # The rest of the list comes from the vector, in its order, after every BM25 match.
    assert [hit.text_rank for hit in hits] == [1, 2, None, None, None]
    assert [hit.vector_rank for hit in hits[2:]] == sorted(hit.vector_rank for hit in hits[2:])


def test_the_model_and_bm25_are_fused_for_a_question_it_can_read(
    minilm_store: VectorStore,
) -> None:
    hits = minilm_store.query("Which river flows into the Caspian Sea?", 5)
    by_vector = minilm_store.query("Which river flows into the Caspian Sea?", 5, hybrid=False)
    assert hits[0].score <= 1.0  # a fused score, not BM25's
    assert {hit.chunk.chunk_id for hit in hits} == {hit.chunk.chunk_id for hit in by_vector}


def test_a_multilingual_model_is_fused_on_any_script(tmp_path: Path) -> None:
    with VectorStore(tmp_path / "static.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(list(PARAGRAPHS.values()), ids=list(PARAGRAPHS))
        hits = store.query("Какая река впадает в Каспийское море?", 5)
    assert hits[0].chunk.chunk_id == "river"
    assert all(hit.vector_rank is not None for hit in hits)
    assert hits[0].score <= 1.0
