"""bench/docsqa.py end to end on a tiny docs tree: the CLI indexes it, the SDK asks, eval checks.

Each question's answer page is the only page about its subject, so every mode must put it
first; the question whose answer file is not in the tree is a miss in ``all`` rows and absent
from ``page`` rows and from eval's judgments; the duplicate question is dropped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPOSITORY, STATIC_MODEL

# Both tests read one run of the benchmark script (a few seconds).
pytestmark = pytest.mark.slow

SCRIPT = REPOSITORY / "bench" / "docsqa.py"
PAGES = {
    "orchard.md": "# Pruning apple trees\n\nPrune apple trees in late winter, while the trees"
    " are dormant: cut out dead branches, crossing limbs and water sprouts with clean shears.",
    "geology/volcanoes.md": "# Volcanoes\n\nA volcano erupts when magma rises through the crust;"
    " lava, ash and volcanic gases escape from the crater during an eruption.",
    "chess.md": "# Chess openings\n\nThe Sicilian Defence answers 1.e4 with 1...c5; the queen's"
    " gambit opens 1.d4 d5 2.c4, offering a pawn for control of the centre.",
    "violin.md": "# Violin care\n\nLoosen the bow hair after playing, wipe rosin from the strings"
    " and keep the violin in its case away from heat and damp.",
}
QUESTIONS = [
    ("q1", "when should I prune my apple trees?", "orchard.md", "page", False),
    ("q1-again", "when should I prune apple trees?", "orchard.md", "page", True),
    ("q2", "why does a volcano erupt lava and ash?", "geology/volcanoes.md", "page", False),
    ("q3", "what is the Sicilian Defence chess opening?", "chess.md", "page", False),
    ("q4", "how do I tune a piano?", "piano.md", "page_missing_at_commit", False),
]


def write_inputs(folder: Path) -> tuple[Path, Path]:
    tree = folder / "docs"
    for name, text in PAGES.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text + "\n", encoding="utf-8")
    questions = folder / "questions.jsonl"
    rows = [
        {
            "_id": qid,
            "question": text,
            "answer_files": [f"doc/source/{page}"],
            "label_kind": kind,
            "duplicate_question": duplicate,
        }
        for qid, text, page, kind, duplicate in QUESTIONS
    ]
    questions.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return tree, questions


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    """One run asking for the static model and for mpnet, whose folder is not there."""
    folder = tmp_path_factory.mktemp("docsqa")
    tree, questions = write_inputs(folder)
    out = folder / "result.json"
    environment = {
        **os.environ,
        "DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL),
        "DUCKDB_VECTORS_MPNET_PATH": str(folder / "not-built"),
    }
    command = [sys.executable, str(SCRIPT), "--tree", str(tree), "--questions", str(questions)]
    options = ["--workdir", str(folder / "work"), "--out", str(out), "--check-eval"]
    done = subprocess.run(
        [*command, *options, "--models", "static,mpnet"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "| static | hybrid | all | 4 |" in done.stdout
    return done, out


@pytest.fixture(scope="module")
def report(finished: tuple[subprocess.CompletedProcess, Path]) -> dict[str, Any]:
    return json.loads(finished[1].read_text())


@pytest.mark.parametrize("mode", ["hybrid", "vector", "bm25", "hybrid-one-per-source"])
def test_every_answer_ranks_first_and_the_missing_page_is_a_miss(
    report: dict[str, Any], mode: str
) -> None:
    rows = report["results"]["static"]["modes"][mode]
    assert rows["all"]["questions"] == 4  # the duplicate is dropped
    assert rows["page"]["questions"] == 3
    for k in (1, 3, 5, 10, 13):
        assert rows["all"][f"hit@{k}"] == 0.75
        assert rows["page"][f"hit@{k}"] == 1.0
    assert rows["all"]["mrr@10"] == 0.75
    assert rows["page"]["mrr@10"] == 1.0


def test_the_answer_outside_the_index_is_reported_and_left_out_of_eval(
    report: dict[str, Any],
) -> None:
    result = report["results"]["static"]
    assert result["answer_not_indexed"] == [
        {"id": "q4", "kind": "page_missing_at_commit", "answers": ["piano.md"]}
    ]
    check = result["check_eval"]
    assert check["judged_questions"] == check["eval_queries"] == 3
    assert check["eval_mrr@10"] == check["script_eval_definition_mrr@10"] == 1.0


def test_a_model_not_built_is_skipped_saying_how_to_build_it(
    finished: tuple[subprocess.CompletedProcess, Path], report: dict[str, Any]
) -> None:
    done, _ = finished
    assert list(report["results"]) == ["static"]
    assert "skipping mpnet: no model folder at" in done.stderr
    assert "recipes/all-mpnet-base-v2.sh" in done.stderr
    assert "| mpnet |" not in done.stdout


def test_embedding_one_query_is_timed_apart(
    finished: tuple[subprocess.CompletedProcess, Path], report: dict[str, Any]
) -> None:
    one = report["results"]["static"]["embed_one_query_ms"]
    assert one["n"] == 4
    assert 0 < one["p50_ms"] <= one["p95_ms"]
    assert "| model | embed one query p50 ms | p95 ms |" in finished[0].stdout
