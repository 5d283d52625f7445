"""Relevance on real evaluation sets: hybrid must be at least as good as its better signal.

BEIR SciFact (train judgments) and XQuAD-R paragraphs in five languages, embedded with the
real static model. The numbers themselves are reported by bench/relevance.py.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import DEFAULT_BACKEND, EVALDATA, STATIC_MODEL

from duckdb_vectors import VectorStore
from duckdb_vectors.evaluation import evaluate, load_qrels, load_queries, mrr_at, ndcg_at, recall_at

IR = EVALDATA / "ir"
SETS = {
    "scifact": (IR / "scifact", "train"),
    **{
        f"xquad-{lang}": (IR / "xquad-r-paragraphs" / lang, "test")
        for lang in ("en", "de", "es", "ru", "zh")
    },
}


def test_metrics_on_a_hand_computed_example() -> None:
    ranked = ["d3", "d1", "d7", "d2"]
    relevant = {"d1": 1, "d2": 2}
    # DCG = 1/log2(3) + 2/log2(5); ideal = 2/log2(2) + 1/log2(3)
    dcg = 1 / 1.584962500721156 + 2 / 2.321928094887362
    ideal = 2 / 1 + 1 / 1.584962500721156
    assert ndcg_at(ranked, relevant, 10) == pytest.approx(dcg / ideal)
    assert recall_at(ranked, relevant, 2) == 0.5
    assert recall_at(ranked, relevant, 10) == 1.0
    assert mrr_at(ranked, relevant) == 0.5
    assert ndcg_at([], relevant) == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SETS))
def test_hybrid_is_at_least_as_good_as_the_better_signal(name: str, tmp_path: Path) -> None:
    folder, split = SETS[name]
    with gzip.open(folder / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        documents = [json.loads(line) for line in handle]
    with VectorStore(tmp_path / "eval.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(
            [f"{d.get('title') or ''}\n{d['text']}".strip() for d in documents],
            ids=[str(d["_id"]) for d in documents],
        )
        reports = evaluate(
            store,
            load_queries(folder / "queries.jsonl"),
            load_qrels(folder / "qrels" / f"{split}.tsv"),
            depth=10,
        )
    ndcg = {mode: report.ndcg_at_10 for mode, report in reports.items()}
    # "At least as good" up to one query: on XQuAD-R zh and es the English-centred static
    # model adds nothing to BM25 and the two tie (bootstrap 95% interval of the difference
    # about +-0.002); stripping whitespace off 22 paragraphs moves zh by 0.0003 either way.
    one_query = 1 / len(load_qrels(folder / "qrels" / f"{split}.tsv"))
    assert ndcg["hybrid"] >= max(ndcg["vector"], ndcg["text"]) - one_query, ndcg
