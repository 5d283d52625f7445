"""Each relevance lever's share on the Ray docs questions, switched on one after another.

The levers of the relevance work (docs/relevance.md), from the release before it to now, on
one index of the Ray docs (static model): each row re-tokenizes a copy of the index or changes
the ranking in this process only, by setting the module attributes that hold the lever, so
every row is the same code with one more lever on. The API-pages row needs an index built
without them (``--without-api-pages``: an index from the release before, or built with
``CHUNKING_VERSION`` 4's reST chunker).

    python bench/docsqa_levers.py --index ray.duckdb --without-api-pages ray-v4.duckdb

Prints page hit@5, hit@13 and MRR@10 over all questions (as bench/docsqa.py counts them) for
the hybrid chunk list and one hit per page.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
from common import MODEL
from docsqa import RAY, Question, load_questions

import duckdb_vectors.search.answer as search
from duckdb_vectors import FusionSettings, VectorStore
from duckdb_vectors.index import chunk_table, terms


@dataclass(frozen=True)
class Levers:
    word_forms: bool = False
    question_words: bool = False
    title_weight: int = 1
    bm25_outside_zero: bool = False
    page_support: float = 0.0
    lexical_weight: float = 0.7


STEPS: list[tuple[str, Levers, bool]] = [
    ("before (exact BM25, fusion and pages as before)", Levers(), False),
    ("+ BM25 gives 0 outside its candidates", Levers(bm25_outside_zero=True), False),
    ("+ word forms", Levers(True, bm25_outside_zero=True), False),
    ("+ question words left out", Levers(True, True, bm25_outside_zero=True), False),
    ("+ title weight 2", Levers(True, True, 2, True), False),
    ("+ page score (best + 0.3 x next two)", Levers(True, True, 2, True, 0.3), False),
    ("+ API listing pages indexed", Levers(True, True, 2, True, 0.3), True),
    ("(BM25 share 0.5, as eval --tune picks here)", Levers(True, True, 2, True, 0.3, 0.5), True),
]


@contextmanager
def levers_set(levers: Levers) -> Iterator[None]:
    saved = (terms.word_forms, terms.QUESTION_WORDS, terms.TITLE_WEIGHT)
    saved_ranking = (search._relative_at, search.PAGE_SUPPORT)
    if not levers.word_forms:  # every word as written
        terms.word_forms = lambda words, language="english": list(words)
    if not levers.question_words:
        terms.QUESTION_WORDS = frozenset()
    terms.TITLE_WEIGHT = levers.title_weight
    search.PAGE_SUPPORT = levers.page_support
    if not levers.bm25_outside_zero:
        search._relative_at = _lowest_outside(saved_ranking[0])
    try:
        yield
    finally:
        terms.word_forms, terms.QUESTION_WORDS, terms.TITLE_WEIGHT = saved
        search._relative_at, search.PAGE_SUPPORT = saved_ranking


def _lowest_outside(relative_at: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """The fusion before: a chunk outside either signal's candidates got its lowest score."""
    return lambda slots, scores, size, outside: relative_at(slots, scores, size, "lowest")


def retokenized(index: Path, folder: Path) -> Path:
    copy = Path(shutil.copy(index, folder / "levers.duckdb"))
    with duckdb.connect(str(copy)) as connection:
        connection.execute("BEGIN")
        chunk_table.retokenize(connection, 16_384, "english")
        connection.execute("COMMIT")
    return copy


def measured(path: Path, questions: list[Question], weight: float) -> dict[str, tuple]:
    fusion = FusionSettings(lexical_weight=weight)
    with VectorStore(path, read_only=True, model_path=MODEL, fusion=fusion) as store:
        texts = [question.text for question in questions]
        vectors = store.embedder.embed_query(texts)
        return {
            name: _scores(
                questions,
                [
                    [hit.chunk.source for hit in store.query(t, 13, vector=v, one_per_source=pages)]
                    for t, v in zip(texts, vectors, strict=True)
                ],
            )
            for name, pages in (("hybrid", False), ("one per page", True))
        }


def _scores(questions: list[Question], ranked: list[list[str | None]]) -> tuple:
    firsts = [
        next((rank for rank, source in enumerate(sources) if source in q.answers), None)
        for q, sources in zip(questions, ranked, strict=True)
    ]
    count = len(questions)
    hit5 = sum(first is not None and first < 5 for first in firsts) / count
    hit13 = sum(first is not None for first in firsts) / count
    mrr = sum(1 / (first + 1) for first in firsts if first is not None and first < 10) / count
    return hit5, hit13, mrr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True, help="the Ray docs, indexed now")
    parser.add_argument("--without-api-pages", type=Path, required=True)
    parser.add_argument("--questions", type=Path, default=RAY / "questions.jsonl")
    arguments = parser.parse_args()
    questions = load_questions(arguments.questions, "doc/source/", keep_duplicates=False)
    print("| step | hybrid hit@5 | hit@13 | MRR@10 | one per page hit@5 | hit@13 | MRR@10 |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for name, levers, api_pages in STEPS:
            index = arguments.index if api_pages else arguments.without_api_pages
            with levers_set(levers):
                scores = measured(
                    retokenized(index, Path(scratch)), questions, levers.lexical_weight
                )
            cells = [f"{value:.3f}" for mode in scores.values() for value in mode]
            print(f"| {name} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
