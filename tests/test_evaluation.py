"""The eval metrics against trec_eval's own implementation, and the ``eval`` command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import pytrec_eval
from click.testing import Result
from conftest import DEFAULT_BACKEND, EVALDATA, STATIC_MODEL, run_cli

from duckdb_vectors import FusionSettings, VectorStore
from duckdb_vectors.config import STATIC_LEXICAL_WEIGHT
from duckdb_vectors.evaluation import (
    load_qrels,
    load_queries,
    mrr_at,
    ndcg_at,
    recall_at,
)

XQUAD_EN = EVALDATA / "ir" / "xquad-r-paragraphs" / "en"


@pytest.fixture(scope="module")
def xquad_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gzip

    with gzip.open(XQUAD_EN / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        documents = [json.loads(line) for line in handle]
    path = tmp_path_factory.mktemp("eval") / "xquad-en.duckdb"
    with VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts([d["text"] for d in documents], ids=[d["_id"] for d in documents])
    return path


@pytest.mark.slow
def test_metrics_match_trec_eval_on_a_real_run(xquad_index: Path) -> None:
    queries = load_queries(XQUAD_EN / "queries.jsonl")
    qrels = load_qrels(XQUAD_EN / "qrels" / "test.tsv")
    judged = list(qrels)[:300]
    with VectorStore(xquad_index, model_path=STATIC_MODEL, read_only=True) as store:
        rankings = {q: [h.chunk.chunk_id for h in store.query(queries[q], 100)] for q in judged}
    # trec_eval ranks by score: give each hit a strictly decreasing score.
    run = {q: {doc: 1000.0 - i for i, doc in enumerate(docs)} for q, docs in rankings.items()}
    measures = {"ndcg_cut.10", "recall.10,100", "recip_rank"}
    reference = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in judged}, measures)
    expected = reference.evaluate(run)
    for q in judged:
        ours, theirs = rankings[q], expected[q]
        assert ndcg_at(ours, qrels[q], 10) == pytest.approx(theirs["ndcg_cut_10"], abs=1e-9)
        assert recall_at(ours, qrels[q], 10) == pytest.approx(theirs["recall_10"])
        assert recall_at(ours, qrels[q], 100) == pytest.approx(theirs["recall_100"])
        # trec_eval's reciprocal rank is not cut off; ours stops at 10.
        assert mrr_at(ours, qrels[q], 100) == pytest.approx(theirs["recip_rank"])


def run_eval(index: Path, *options: str) -> Result:
    """``duckdb-vectors eval`` on XQuAD-R en against ``index``."""
    return run_cli(
        "eval",
        "--db",
        str(index),
        "--queries",
        str(XQUAD_EN / "queries.jsonl"),
        "--qrels",
        str(XQUAD_EN / "qrels" / "test.tsv"),
        *options,
    )


@pytest.mark.slow
def test_eval_command_json(xquad_index: Path) -> None:
    result = run_eval(xquad_index, "--modes", "hybrid,text", "--json")
    assert result.exit_code == 0, result.stderr
    reports = json.loads(result.stdout)
    assert set(reports) == {"hybrid", "text"}
    assert reports["hybrid"]["ndcg_at_10"] > 0.9 and reports["text"]["recall_at_100"] > 0.9
    assert set(reports["hybrid"]["latency_ms"]) == {"p50", "p95", "p99"}


def test_eval_command_refuses_unknown_modes(xquad_index: Path) -> None:
    result = run_eval(xquad_index, "--modes", "hybrid,magic")
    assert result.exit_code == 2 and "unknown mode ['magic']" in result.stderr


@pytest.mark.slow
def test_eval_reports_how_many_queries_were_judged(xquad_index: Path) -> None:
    result = run_eval(xquad_index, "--modes", "text", "--json")
    judged = len(load_qrels(XQUAD_EN / "qrels" / "test.tsv"))
    assert json.loads(result.stdout)["text"]["queries"] == judged
    assert run_eval(xquad_index, "--modes", "text").stdout.startswith(f"{judged} judged queries")


def test_eval_with_no_query_in_both_files_says_so(xquad_index: Path, tmp_path: Path) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"_id": "other-1", "text": "a question"}\n')
    result = run_eval(xquad_index, "--queries", str(queries))
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: no query id is in both files: --qrels judges")
    assert "'other-1'" in result.stderr and "Traceback" not in result.stderr


def test_eval_whose_corpus_ids_name_nothing_in_the_index_says_so(xquad_index: Path) -> None:
    result = run_eval(xquad_index, "--by", "source")  # the XQuAD index has ids, not sources
    assert result.exit_code == 2
    assert "is a source in the index" in result.stderr and "try --by chunk_id" in result.stderr


def test_a_new_index_records_the_default_share_of_its_models_kind(xquad_index: Path) -> None:
    with VectorStore(xquad_index, read_only=True, model_path=STATIC_MODEL) as store:
        assert store.manifest is not None
        assert store.manifest.lexical_weight == STATIC_LEXICAL_WEIGHT == store.fusion.lexical_weight


@pytest.fixture
def few_qrels(tmp_path: Path) -> Path:
    """150 of XQuAD-R en's judgments: tuning evaluates the hybrid at eleven shares."""
    lines = (XQUAD_EN / "qrels" / "test.tsv").read_text().splitlines()
    path = tmp_path / "few.tsv"
    path.write_text("\n".join(lines[:151]) + "\n")
    return path


@pytest.mark.slow
def test_tune_picks_the_best_share_records_it_and_reopening_uses_it(
    xquad_index: Path, tmp_path: Path, few_qrels: Path
) -> None:
    index = Path(shutil.copy(xquad_index, tmp_path / "tuned.duckdb"))
    with VectorStore(index, model_path=STATIC_MODEL) as store:
        store.record_lexical_weight(0.0)  # the vector alone: BM25 does better on XQuAD-R
    result = run_eval(
        index, "--tune", "--modes", "hybrid,text", "--json", "--qrels", str(few_qrels)
    )
    assert result.exit_code == 0, result.stderr
    shown = json.loads(result.stdout)
    tuning, modes = shown["tuning"], shown["modes"]
    scores = {float(weight): score for weight, score in tuning["ndcg_at_10"].items()}
    assert tuning["before"] == 0.0 and scores[tuning["after"]] == max(scores.values())
    assert tuning["after"] > 0.0 and scores[tuning["after"]] > scores[0.0]
    assert modes["hybrid"]["ndcg_at_10"] == pytest.approx(scores[tuning["after"]])
    assert modes["hybrid"]["ndcg_at_10"] >= modes["text"]["ndcg_at_10"]
    with VectorStore(index, read_only=True, model_path=STATIC_MODEL) as store:
        assert store.manifest is not None and store.manifest.lexical_weight == tuning["after"]
        assert store.fusion.lexical_weight == tuning["after"]
        # An explicit share still wins over the recorded one.
        store.settings.fusion = FusionSettings(lexical_weight=0.25)
        assert store.fusion.lexical_weight == 0.25


@pytest.mark.slow
def test_tune_says_what_it_recorded(xquad_index: Path, tmp_path: Path, few_qrels: Path) -> None:
    index = Path(shutil.copy(xquad_index, tmp_path / "tuned.duckdb"))
    result = run_eval(index, "--tune", "--modes", "hybrid", "--qrels", str(few_qrels))
    assert result.exit_code == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("BM25 share 0.70 -> ") and f"recorded in {index}" in first
