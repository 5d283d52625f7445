"""Libraries: one index file with a slice per library, or one file per library?

The Ray docs (with their 211 judged questions) and the DuckDB docs (425 pages, a realistic
second library: its pages are the distractors) are indexed three ways, each as a user would
(``duckdb-vectors index``, a fresh process): Ray alone, DuckDB alone, and both as a bundle
(``index --bundle``). Then, in fresh processes taking turns:

- relevance: the Ray questions on the Ray file, on the bundle scoped to ``library=ray``, and on
  the bundle across all libraries (page hit@k and MRR@10, hybrid and one per page, as
  ``docsqa.py`` counts them);
- serving cost: opening and warming the bundle (``warm_up()``: model and in-memory index)
  against opening and warming the two files in one process, its seconds and peak RSS;
- rebuild cost: after one DuckDB page changed, ``index --bundle`` against ``index`` of the
  DuckDB file alone.

    python bench/libraries.py                 # static model, 3 rounds
    python bench/libraries.py --rounds 5 --workdir /tmp/libraries

Writes bench/results/<date>/libraries.json and prints a Markdown table; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from datetime import date
from pathlib import Path
from typing import Any

from common import (
    HERE,
    MODEL,
    RAY,
    SCRIPT,
    SHARED,
    alternate,
    machine,
    run,
    run_function,
)
from common import summary as medians
from docsqa import MODES, Search, by_row_set, load_questions, log, run_mode

from duckdb_vectors import VectorStore

RAY_TREE = RAY / "docs" / "doc" / "source"
DUCKDB_TREE = SHARED / "evaldata" / "docs" / "duckdb" / "docs" / "current"
BACKEND = "fastembed:minishlab/potion-multilingual-128M"
SEARCHES = ("hybrid", "hybrid-one-per-source")
CHANGED_PAGE = "sql/functions/aggregates.md"


def cli(*arguments: str) -> Any:
    environment = {**os.environ, "DUCKDB_VECTORS_MODEL_PATH": str(MODEL), "HF_HUB_OFFLINE": "1"}
    return run([SCRIPT, *arguments], env=environment)


def build(workdir: Path) -> dict[str, float]:
    """The three indexes, built from nothing; each one's seconds."""
    duckdb_copy = workdir / "duckdb-docs"
    shutil.rmtree(duckdb_copy, ignore_errors=True)
    shutil.copytree(DUCKDB_TREE, duckdb_copy)  # the rebuild changes a page of it
    bundle = workdir / "docs.yaml"
    bundle.write_text(
        "libraries:\n"
        f"  - {{name: ray, version: '2.9', source: {RAY_TREE}}}\n"
        f"  - {{name: duckdb, version: '1.5', source: {duckdb_copy}}}\n"
    )
    seconds = {}
    for name, arguments in {
        "ray": [str(RAY_TREE)],
        "duckdb": [str(duckdb_copy)],
        "bundle": ["--bundle", str(bundle)],
    }.items():
        db = workdir / f"{name}.duckdb"
        db.unlink(missing_ok=True)
        log(f"indexing {name}")
        done = cli("index", *arguments, "--db", str(db), "--backend", BACKEND)
        seconds[name] = round(done.seconds, 2)
    return seconds


def relevance(workdir: Path) -> dict[str, Any]:
    """The Ray questions on the Ray file, and on the bundle scoped and not."""
    questions = load_questions(RAY / "questions.jsonl", "doc/source/", keep_duplicates=False)
    prefixed = [
        question.__class__(
            question.id,
            question.text,
            frozenset(f"ray/2.9/{answer}" for answer in question.answers),
            question.kind,
        )
        for question in questions
    ]
    cases = {
        "ray file": (workdir / "ray.duckdb", questions, None),
        "bundle, library=ray": (workdir / "bundle.duckdb", prefixed, {"library": "ray"}),
        "bundle, all libraries": (workdir / "bundle.duckdb", prefixed, None),
    }
    results = {}
    for name, (db, asked, scope) in cases.items():
        with VectorStore(db, read_only=True, model_path=MODEL) as store:
            vectors = store.embedder.embed_query([question.text for question in asked])
            results[name] = {}
            for mode in SEARCHES:
                log(f"{name}: {mode}")
                records = run_mode(store, scoped(mode, scope), asked, vectors)
                results[name][mode] = by_row_set(records, asked)
    return results


def scoped(mode: str, scope: dict[str, str] | None) -> Search:
    """``docsqa``'s search ``mode``, within the metadata filter ``scope`` if one is given."""
    if scope is None:
        return MODES[mode]
    one = mode == "hybrid-one-per-source"
    return lambda store, text, vector, k: store.query(
        text, k, vector=vector, filter=scope, one_per_source=one
    )


def warm(paths: list[str]) -> dict[str, float]:
    """Open and warm the indexes at ``paths`` in this process (run in a fresh one)."""
    import time

    started = time.perf_counter()
    stores = [VectorStore(path, read_only=True, model_path=str(MODEL)) for path in paths]
    for store in stores:
        store.warm_up()
    seconds = time.perf_counter() - started
    for store in stores:
        store.close()
    return {"seconds": seconds}


def serving(workdir: Path, rounds: int) -> dict[str, Any]:
    files = {
        "bundle (one file)": [str(workdir / "bundle.duckdb")],
        "ray + duckdb (two files)": [str(workdir / "ray.duckdb"), str(workdir / "duckdb.duckdb")],
    }
    runs = alternate(
        {name: (lambda paths=paths: run_function(warm, paths)) for name, paths in files.items()},
        rounds,
        log=log,
    )
    return {
        name: {
            "warm_up_s": round(
                sorted(r.result["seconds"] for r in measured)[len(measured) // 2], 3
            ),
            "peak_rss_mb": round(medians(measured)["peak_rss_mb"], 1),
        }
        for name, measured in runs.items()
    }


def rebuild(workdir: Path, rounds: int) -> dict[str, Any]:
    """After one DuckDB page changed: the bundle's rebuild against the DuckDB file's."""
    page = workdir / "duckdb-docs" / CHANGED_PAGE
    original = page.read_text()
    counter = iter(range(10**6))

    def changed_then(arguments: list[str]) -> Any:
        page.write_text(original + f"\n\nChanged {next(counter)}.\n")
        return cli("index", *arguments, "--json")

    contenders = {
        "index --bundle (both libraries)": lambda: changed_then(
            ["--bundle", str(workdir / "docs.yaml"), "--db", str(workdir / "bundle.duckdb")]
        ),
        "index duckdb alone": lambda: changed_then(
            [str(workdir / "duckdb-docs"), "--db", str(workdir / "duckdb.duckdb")]
        ),
    }
    runs = alternate(contenders, rounds, log=log)
    page.write_text(original)
    result = {}
    for name, measured in runs.items():
        summary = json.loads(measured[-1].stdout)
        runs_of = summary.get("libraries", [{"summary": summary}])
        embedded = sum(one["summary"]["chunks_embedded"] for one in runs_of)
        result[name] = {**medians(measured), "chunks_embedded": embedded}
    return result


def table(result: dict[str, Any]) -> str:
    lines = [
        "| searched | mode | hit@1 | hit@5 | hit@13 | MRR@10 |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, modes in result["relevance"].items():
        for mode, rows in modes.items():
            row = rows["all"]
            lines.append(
                f"| {name} | {mode} | {row['hit@1']:.3f} | {row['hit@5']:.3f} |"
                f" {row['hit@13']:.3f} | {row['mrr@10']:.3f} |"
            )
    lines += ["", "| served | warm_up (s) | peak RSS (MB) |", "|---|---:|---:|"]
    for name, row in result["serving"].items():
        lines.append(f"| {name} | {row['warm_up_s']:.2f} | {row['peak_rss_mb']:.0f} |")
    lines += ["", "| rebuild after one page changed | s | chunks embedded |", "|---|---:|---:|"]
    for name, row in result["rebuild"].items():
        lines.append(f"| {name} | {row['seconds']:.2f} | {row['chunks_embedded']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=HERE / "out" / "libraries")
    parser.add_argument("--out", type=Path)
    arguments = parser.parse_args()
    if SCRIPT is None:
        raise SystemExit("duckdb-vectors is not installed beside this python: make install")
    arguments.workdir.mkdir(parents=True, exist_ok=True)
    result = {
        "machine": machine(),
        "index_seconds": build(arguments.workdir),
        "relevance": relevance(arguments.workdir),
        "serving": serving(arguments.workdir, arguments.rounds),
        "rebuild": rebuild(arguments.workdir, arguments.rounds),
    }
    out = arguments.out or HERE / "results" / str(date.today()) / "libraries.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(table(result))
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
