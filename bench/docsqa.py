"""Docs QA: page-level hit@k and MRR@10 of real questions over a documentation tree.

The tree is indexed as a user would (``duckdb-vectors index TREE --db DB --backend B``, one
process per model, the model's folder in DUCKDB_VECTORS_MODEL_PATH); the index is kept in
``--workdir`` and reused unless ``--reindex``. Each question is then asked through the SDK
(``VectorStore(read_only=True)``), all queries embedded once up front, so the latency (p50 ms)
is the search alone (each question is also embedded alone, timed apart: what embedding one query
costs). Every mode of ``MODES`` asks once for 13 chunks, and the numbers are:

- hit@k (k = 1, 3, 5, 10, 13): an answer page is the source of one of the first k chunks;
- MRR@10: 1 / the rank of the first chunk whose source is an answer page, 0 past 10;

over ``all`` questions (a question whose answer page is not in the index is a miss) and over
``page`` rows (``label_kind == "page"``). Questions marked ``duplicate_question`` are left out
unless ``--keep-duplicates``.

    python bench/docsqa.py                                   # the Ray docs, static model
    python bench/docsqa.py --models static,minilm --label both --check-eval
    python bench/docsqa.py --models static,minilm,mpnet --label models   # issue 43's table
    python bench/docsqa.py --tree DOCS --questions questions.jsonl --strip-prefix docs/ \\
        --modes hybrid,bm25 --workdir /tmp/docsqa-mine

Models (``MODELS``): ``static`` (DUCKDB_VECTORS_MODEL_PATH, else ../shared's stand-in for
potion-multilingual-128M), ``minilm`` (all-MiniLM-L6-v2 int8 from ../shared) and ``mpnet``
(all-mpnet-base-v2, built by ../shared/models/recipes/all-mpnet-base-v2.sh into
DUCKDB_VECTORS_MPNET_PATH, default ../models/all-mpnet-base-v2); a model whose folder is not
there is skipped, saying how to get it.

``--check-eval`` also writes BEIR files (queries.jsonl; qrels.tsv with corpus-id = source) and
runs ``duckdb-vectors eval --by source --modes hybrid``. Only questions with an answer page in
the index are judged there: an answer file the index does not hold (not in the tree, or skipped
by the indexer) is left out of the qrels, and a question left with none is not judged. Its
MRR@10 differs from this script's hybrid MRR@10 for principled reasons: eval ranks documents
(each source once, at its best chunk; a page's second chunk does not push the next page down)
and asks 3 x 100 chunks, so each signal is read 300 deep before fusing instead of 100, which
moves relative-score fusion's normalisation. The check therefore prints, over eval's questions,
this script's hybrid and hybrid-one-per-source MRR@10 and its own count of eval's definition
(document ranks of a 300-chunk hybrid list), which must equal eval's.

Writes bench/results/<date>/docsqa-<label>.json (or ``--out``) and prints Markdown tables;
progress goes to stderr.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import statistics
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    HERE,
    MODEL,
    RAY,
    SCRIPT,
    SHARED,
    latencies,
    machine,
    run,
    timed,
    write_json,
)

from duckdb_vectors import SearchResult, VectorStore

KS = (1, 3, 5, 10, 13)
DEPTH = max(KS)
MRR_K = 10
EVAL_DEPTH = 3 * 100  # what `duckdb-vectors eval --by source` asks for (evaluation.DEPTH x 3)


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    answers: frozenset[str]  # sources: answer_files without --strip-prefix
    kind: str


@dataclass(frozen=True)
class Model:
    backend: str
    path: Path
    how_to_get: str  # said when ``path`` is not a folder


# all-mpnet-base-v2 is too big for ../shared: a recipe there builds it (about 5 minutes).
MPNET = Path(
    os.environ.get("DUCKDB_VECTORS_MPNET_PATH", SHARED.parent / "models" / "all-mpnet-base-v2")
)
MODELS = {
    "static": Model(
        "fastembed:minishlab/potion-multilingual-128M",
        MODEL,
        "set DUCKDB_VECTORS_MODEL_PATH to the static model's folder",
    ),
    "minilm": Model(
        "fastembed:sentence-transformers/all-MiniLM-L6-v2",
        SHARED / "models" / "onnx-minilm-l6-v2-int8",
        "set DUCKDB_VECTORS_SHARED to the folder holding models/onnx-minilm-l6-v2-int8",
    ),
    "mpnet": Model(
        "hf:sentence-transformers/all-mpnet-base-v2",
        MPNET,
        f"build it with `bash {SHARED}/models/recipes/all-mpnet-base-v2.sh {MPNET}`"
        " (or set DUCKDB_VECTORS_MPNET_PATH to where it is)",
    ),
}

Search = Callable[[VectorStore, str, np.ndarray, int], Sequence[SearchResult]]
# A new variant is one line: (store, question, its vector, how many hits) -> hits.
MODES: dict[str, Search] = {
    "hybrid": lambda store, text, vector, k: store.query(text, k, vector=vector),
    "vector": lambda store, text, vector, k: store.query_vectors(vector, k),
    "bm25": lambda store, text, vector, k: store.query_text(text, k),
    "hybrid-one-per-source": lambda store, text, vector, k: store.query(
        text, k, vector=vector, one_per_source=True
    ),
}
Rank = Callable[[Sequence[SearchResult], frozenset[str]], int | None]
ROW_SETS: dict[str, Callable[[Question], bool]] = {
    "all": lambda question: True,
    "page": lambda question: question.kind == "page",
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load_questions(path: Path, strip_prefix: str, keep_duplicates: bool) -> list[Question]:
    with path.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [
        Question(
            id=str(row["_id"]),
            text=row["question"],
            answers=frozenset(f.removeprefix(strip_prefix) for f in row["answer_files"]),
            kind=row.get("label_kind", "page"),
        )
        for row in rows
        if keep_duplicates or not row.get("duplicate_question", False)
    ]


def default_workdir(tree: Path) -> Path:
    """bench/out/docsqa/<folder>-<hash of its absolute path>: one cache per tree."""
    digest = hashlib.sha256(str(tree.resolve()).encode()).hexdigest()[:8]
    return HERE / "out" / "docsqa" / f"{tree.resolve().name}-{digest}"


def cli(arguments: Sequence[str], model: Model) -> Any:
    """``duckdb-vectors ARGUMENTS`` with the model's folder, in a fresh process (common.run)."""
    if SCRIPT is None:
        raise SystemExit("duckdb-vectors is not installed beside this python: make install")
    environment = {
        **os.environ,
        "DUCKDB_VECTORS_MODEL_PATH": str(model.path),
        "HF_HUB_OFFLINE": "1",
    }
    return run([SCRIPT, *arguments], env=environment)


def build_index(tree: Path, db: Path, model: Model, reindex: bool) -> float | None:
    """Index ``tree`` into ``db`` as a user would; the seconds it took, None if reused."""
    if db.exists() and not reindex:
        log(f"reusing {db} (--reindex to build it again)")
        return None
    for path in (db, db.with_name(db.name + ".wal")):
        path.unlink(missing_ok=True)
    db.parent.mkdir(parents=True, exist_ok=True)
    log(f"indexing {tree} into {db} with {model.backend}")
    done = cli(["index", str(tree), "--db", str(db), "--backend", model.backend], model)
    log(done.stdout.strip())
    log(f"indexed in {done.seconds:.1f} s (peak RSS {done.peak_rss_mb:.0f} MB)")
    return done.seconds


def first_answer_rank(sources: Iterable[str | None], answers: frozenset[str]) -> int | None:
    """The 1-based rank of the first source that is an answer page."""
    return next((rank for rank, source in enumerate(sources, 1) if source in answers), None)


def chunk_rank(hits: Sequence[SearchResult], answers: frozenset[str]) -> int | None:
    """This script's rank: of the first chunk whose source is an answer page."""
    return first_answer_rank((hit.chunk.source for hit in hits), answers)


def document_rank(hits: Sequence[SearchResult], answers: frozenset[str]) -> int | None:
    """eval's rank: each source once, at its best chunk."""
    return first_answer_rank(dict.fromkeys(hit.chunk.source for hit in hits), answers)


def run_mode(
    store: VectorStore, search: Search, questions: list[Question], vectors: np.ndarray
) -> list[dict[str, Any]]:
    """Each question asked once for DEPTH hits: its answer's rank, the search's ms and the
    first hit's source."""
    search(store, questions[0].text, vectors[0], DEPTH)  # warm: in-memory index, caches
    records = []
    for question, vector in zip(questions, vectors, strict=True):
        hits, elapsed = timed(search, store, question.text, vector, DEPTH)
        rank = chunk_rank(hits, question.answers)
        first = hits[0].chunk.source if hits else None
        records.append({"id": question.id, "rank": rank, "ms": elapsed, "first_source": first})
    return records


def summarise(records: list[dict[str, Any]]) -> dict[str, float]:
    ranks = [record["rank"] for record in records]
    summary: dict[str, float] = {"questions": len(records)}
    for k in KS:
        summary[f"hit@{k}"] = mean(rank is not None and rank <= k for rank in ranks)
    summary[f"mrr@{MRR_K}"] = mean(reciprocal(rank) for rank in ranks)
    summary["p50_ms"] = statistics.median(record["ms"] for record in records)
    return summary


def reciprocal(rank: int | None) -> float:
    return 1.0 / rank if rank is not None and rank <= MRR_K else 0.0


def mean(values: Iterable[float]) -> float:
    listed = list(values)
    return sum(listed) / len(listed) if listed else 0.0


def by_row_set(records: list[dict[str, Any]], questions: list[Question]) -> dict[str, Any]:
    kinds = {question.id: question for question in questions}
    return {
        name: summarise([r for r in records if keep(kinds[r["id"]])])
        for name, keep in ROW_SETS.items()
        if any(keep(question) for question in questions)
    }


def not_indexed(questions: list[Question], indexed: set[str]) -> list[dict[str, Any]]:
    """The questions none of whose answer pages is a source of the index: sure misses."""
    return [
        {"id": q.id, "kind": q.kind, "answers": sorted(q.answers)}
        for q in questions
        if not q.answers & indexed
    ]


def measure_model(
    name: str, questions: list[Question], arguments: argparse.Namespace
) -> dict[str, Any]:
    model = MODELS[name]
    db = arguments.workdir / f"{name}.duckdb"
    seconds = build_index(arguments.tree, db, model, arguments.reindex)
    with VectorStore(db, read_only=True, model_path=model.path) as store:
        indexed = set(store.sources())
        texts = [question.text for question in questions]
        vectors, embed_ms = timed(store.embedder.embed_query, texts)
        one_query = latencies(lambda i: store.embedder.embed_query([texts[i]]), len(texts))
        runs = {}
        for mode in arguments.modes:
            log(f"{name}: {mode} on {len(questions)} questions")
            runs[mode] = run_mode(store, MODES[mode], questions, vectors)
        check = check_eval(store, db, model, questions, vectors) if arguments.check_eval else None
    return {
        "backend": model.backend,
        "db": str(db),
        "index_seconds": seconds,
        "indexed_sources": len(indexed),
        "embed_all_queries_ms": embed_ms,
        "embed_one_query_ms": one_query,
        "answer_not_indexed": not_indexed(questions, indexed),
        "modes": {mode: by_row_set(records, questions) for mode, records in runs.items()},
        "per_question": runs,
        "check_eval": check,
    }


def write_beir(
    questions: list[Question], indexed: set[str], folder: Path, stem: str
) -> tuple[Path, Path, dict[str, frozenset[str]]]:
    """queries.jsonl and qrels.tsv (corpus-id = source) of the questions with an indexed
    answer page; answer files the index does not hold are left out of the qrels."""
    judged = {q.id: q.answers & indexed for q in questions if q.answers & indexed}
    queries, qrels = folder / f"{stem}-queries.jsonl", folder / f"{stem}-qrels.tsv"
    with queries.open("w", encoding="utf-8") as handle:
        for question in questions:
            if question.id in judged:
                handle.write(json.dumps({"_id": question.id, "text": question.text}) + "\n")
    with qrels.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(["query-id", "corpus-id", "score"])
        for query_id, sources in judged.items():
            writer.writerows([query_id, source, 1] for source in sorted(sources))
    return queries, qrels, judged


def check_eval(
    store: VectorStore,
    db: Path,
    model: Model,
    questions: list[Question],
    vectors: np.ndarray,
) -> dict[str, Any]:
    """``duckdb-vectors eval --by source`` on the same questions, beside this script's MRR."""
    queries, qrels, judged = write_beir(questions, set(store.sources()), db.parent, db.stem)
    log(f"eval --by source on {len(judged)} judged questions ({queries}, {qrels})")
    files = ["--db", str(db), "--queries", str(queries), "--qrels", str(qrels)]
    done = cli(["eval", *files, "--by", "source", "--modes", "hybrid", "--json"], model)
    evaluated = json.loads(done.stdout)["hybrid"]
    chosen = [(q, v) for q, v in zip(questions, vectors, strict=True) if q.id in judged]

    def script_mrr(search: Search, depth: int, rank: Rank) -> float:
        return mean(
            reciprocal(rank(search(store, q.text, v, depth), judged[q.id])) for q, v in chosen
        )

    return {
        "judged_questions": len(judged),
        "eval_queries": evaluated["queries"],
        "eval_mrr@10": evaluated["mrr_at_10"],
        "script_hybrid_mrr@10": script_mrr(MODES["hybrid"], DEPTH, chunk_rank),
        "script_hybrid_one_per_source_mrr@10": script_mrr(
            MODES["hybrid-one-per-source"], DEPTH, chunk_rank
        ),
        "script_eval_definition_mrr@10": script_mrr(MODES["hybrid"], EVAL_DEPTH, document_rank),
    }


def table(results: dict[str, dict[str, Any]]) -> str:
    header = ["model", "mode", "rows", "n", *(f"hit@{k}" for k in KS), f"MRR@{MRR_K}", "p50 ms"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, result in results.items():
        for mode, row_sets in result["modes"].items():
            for rows, s in row_sets.items():
                cells = [f"{s[f'hit@{k}']:.3f}" for k in KS] + [f"{s[f'mrr@{MRR_K}']:.3f}"]
                cells = [name, mode, rows, str(s["questions"]), *cells, f"{s['p50_ms']:.2f}"]
                lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def embedding_table(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| model | embed one query p50 ms | p95 ms |", "|---|---:|---:|"]
    for name, result in results.items():
        one = result["embed_one_query_ms"]
        lines.append(f"| {name} | {one['p50_ms']:.2f} | {one['p95_ms']:.2f} |")
    return "\n".join(lines)


def check_table(results: dict[str, dict[str, Any]]) -> str:
    columns = {
        "judged": "judged_questions",
        "eval MRR@10": "eval_mrr@10",
        "script, eval's definition": "script_eval_definition_mrr@10",
        "script hybrid (chunk ranks)": "script_hybrid_mrr@10",
        "script hybrid-one-per-source": "script_hybrid_one_per_source_mrr@10",
    }
    lines = ["| model | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for name, result in results.items():
        check = result["check_eval"]
        if check:
            cells = [
                f"{check[key]:.3f}" if isinstance(check[key], float) else str(check[key])
                for key in columns.values()
            ]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def names(text: str, known: dict[str, Any]) -> list[str]:
    chosen = [name.strip() for name in text.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(known))
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"unknown {unknown}; choose from {', '.join(known)}")
    return chosen


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=RAY / "docs" / "doc" / "source")
    parser.add_argument("--questions", type=Path, default=RAY / "questions.jsonl")
    parser.add_argument(
        "--strip-prefix", default="doc/source/", help="removed from answer_files to get sources"
    )
    parser.add_argument("--keep-duplicates", action="store_true")
    parser.add_argument(
        "--models", type=lambda text: names(text, MODELS), default=["static"], help=",".join(MODELS)
    )
    parser.add_argument(
        "--modes", type=lambda text: names(text, MODES), default=list(MODES), help=",".join(MODES)
    )
    parser.add_argument("--workdir", type=Path, help="cached indexes (default: bench/out/docsqa/)")
    parser.add_argument("--reindex", action="store_true", help="index again even if cached")
    parser.add_argument("--check-eval", action="store_true", help="compare with `eval --by source`")
    parser.add_argument("--label", default="run", help="names the JSON: docsqa-<label>.json")
    parser.add_argument("--out", type=Path)
    arguments = parser.parse_args()
    arguments.workdir = arguments.workdir or default_workdir(arguments.tree)
    return arguments


def model_present(name: str) -> bool:
    """Whether the model's folder is here; if not, say how to get it and skip the model."""
    model = MODELS[name]
    if model.path.is_dir():
        return True
    log(f"skipping {name}: no model folder at {model.path}; {model.how_to_get}")
    return False


def main() -> None:
    arguments = parse_arguments()
    questions = load_questions(
        arguments.questions, arguments.strip_prefix, arguments.keep_duplicates
    )
    log(f"{len(questions)} questions from {arguments.questions}")
    chosen = [name for name in arguments.models if model_present(name)]
    if not chosen:
        raise SystemExit("none of the models asked for is here (see above)")
    results, elapsed_ms = timed(
        lambda: {name: measure_model(name, questions, arguments) for name in chosen}
    )
    report = {
        "label": arguments.label,
        "tree": str(arguments.tree),
        "questions": str(arguments.questions),
        "question_count": len(questions),
        "strip_prefix": arguments.strip_prefix,
        "ks": KS,
        **machine(),
        "seconds": elapsed_ms / 1000,
        "results": results,
    }
    out = arguments.out or HERE / "results" / date.today().isoformat() / (
        f"docsqa-{arguments.label}.json"
    )
    write_json(out, report)
    log(f"wrote {out} in {report['seconds']:.0f} s")
    for name, result in results.items():
        missing = result["answer_not_indexed"]
        log(f"{name}: {len(missing)} questions have no answer page in the index")
    print(table(results))
    print()
    print(embedding_table(results))
    if arguments.check_eval:
        print()
        print(check_table(results))


if __name__ == "__main__":
    main()
