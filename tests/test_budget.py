"""Outputs for agents fit a token budget: cut at a hit, the rest named, never over."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duckdb_vectors.budget import TRUNCATION_MARKER, estimate_tokens, fit
from duckdb_vectors.models import Chunk, SearchResult
from duckdb_vectors.rendering import SearchOutput


def test_the_estimate_is_four_characters_a_token_for_english_and_more_for_other_scripts() -> None:
    assert estimate_tokens("abcdefgh") == 2
    assert estimate_tokens("abcdefghi") == 3  # rounded up
    assert estimate_tokens("привет") == 3  # 12 bytes
    assert estimate_tokens("数据库查询") == 4  # 15 bytes


@pytest.mark.slow
@given(st.text(min_size=0, max_size=400), st.integers(min_value=0, max_value=120))
def test_fit_keeps_a_start_of_the_text_within_the_budget(text: str, budget: int) -> None:
    piece = fit(text, budget)
    assert text.startswith(piece)
    assert estimate_tokens(piece) <= budget


def hits(texts: list[str]) -> list[SearchResult]:
    return [
        SearchResult(
            chunk=Chunk(chunk_id=f"doc{i}.md#0", text=text, source=f"doc{i}.md", metadata={"n": i}),
            score=1.0 / (i + 1),
            vector_rank=i + 1,
        )
        for i, text in enumerate(texts)
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(min_size=1, max_size=600), min_size=1, max_size=12),
    st.integers(min_value=200, max_value=1500),
)
def test_a_search_answer_fits_max_tokens_and_names_every_hit_it_left_out(
    texts: list[str], max_tokens: int
) -> None:
    answer = SearchOutput.of("q", hits(texts), max_tokens)
    assert estimate_tokens(answer.model_dump_json()) <= max_tokens
    shown = [hit.chunk_id for hit in answer.results]
    assert shown + answer.left_out == [f"doc{i}.md#0" for i in range(len(texts))]
    for hit, text in zip(answer.results, texts, strict=False):
        if hit.chunk_id == answer.truncated:
            assert hit.text.endswith(TRUNCATION_MARKER)
            assert text.startswith(hit.text.removesuffix(TRUNCATION_MARKER))
        else:
            assert hit.text == text


def test_without_a_budget_nothing_is_cut() -> None:
    answer = SearchOutput.of("q", hits(["x" * 5000] * 3))
    assert len(answer.results) == 3 and answer.truncated is None and answer.left_out == []
    assert json.loads(answer.model_dump_json())["left_out"] == []
