"""Start-up with the static model: a one-shot CLI search, VectorStore open to the first hybrid
answer, and a reader's RSS after warm_up on ~10k chunks. Fresh processes, medians.

    python bench/static_startup.py --runs 15
    git archive BASE duckdb_vectors | tar -x -C /tmp/base   # another version to compare
    python bench/static_startup.py --runs 15 --before /tmp/base

With ``--before``, each run measures that source tree (put first on PYTHONPATH) and this
checkout alternately, so a busy machine's load falls on both alike. Writes
bench/out/static_startup.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import DOCS, HERE, MODEL, QUERIES, SCRIPT, SHARED, write_json

from duckdb_vectors import VectorStore, index_folder

SCIFACT = SHARED / "evaldata" / "ir" / "scifact" / "corpus.jsonl.gz"
EXAMPLE_DOCS = HERE.parent / "examples" / "docs"
FIRST_ANSWER = """
import json, sys, time
from duckdb_vectors import VectorStore
begin = time.perf_counter()
store = VectorStore(sys.argv[1], model_path=sys.argv[2], read_only=True)
assert store.query(sys.argv[3], 5)
answered = time.perf_counter() - begin
print(json.dumps({"first_answer_s": answered, "imports_fastembed": "fastembed" in sys.modules}))
"""
READER_RSS = """
import json, sys
from pathlib import Path
from duckdb_vectors import VectorStore
store = VectorStore(sys.argv[1], model_path=sys.argv[2], read_only=True)
store.warm_up()
assert store.query(sys.argv[3], 5)
status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
print(json.dumps({key: int(status[key].split()[0]) / 1024 for key in ("VmRSS", "VmHWM")}))
"""


def build_indexes(scratch: Path) -> tuple[Path, Path]:
    """A small index (examples/docs) and one of ~10k chunks (the DuckDB docs and 2,600
    SciFact abstracts)."""
    small, large = scratch / "small.duckdb", scratch / "large.duckdb"
    with VectorStore(small, model_path=MODEL) as store:
        index_folder(store, EXAMPLE_DOCS)
    with VectorStore(large, model_path=MODEL) as store:
        index_folder(store, DOCS)
        with gzip.open(SCIFACT, "rt", encoding="utf-8") as corpus:
            rows = [json.loads(line) for _, line in zip(range(2600), corpus, strict=False)]
        store.add_texts([f"{row['title']}\n\n{row['text']}" for row in rows])
        print(f"indexes: {store.count()} chunks in the large one", flush=True)
    return small, large


def environment(source: Path | None) -> dict[str, str]:
    variables = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    variables["HF_HUB_OFFLINE"] = "1"
    if source is not None:
        variables["PYTHONPATH"] = str(source)
    return variables


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(source: Path | None, small: Path, large: Path) -> dict[str, float]:
    """One run of each measurement in fresh processes, started outside the checkout so that
    ``source`` (when given) is the package imported."""
    run = {"env": environment(source), "cwd": tempfile.gettempdir(), "check": True}
    command = [SCRIPT, "search", QUERIES[0], "--db", str(small), "--model-path", str(MODEL)]
    cpu, begin = children_cpu(), time.perf_counter()
    subprocess.run(command, capture_output=True, **run)
    result = {"cli_s": time.perf_counter() - begin, "cli_cpu_s": children_cpu() - cpu}
    for script, db in ((FIRST_ANSWER, small), (READER_RSS, large)):
        arguments = [sys.executable, "-c", script, str(db), str(MODEL), QUERIES[1]]
        completed = subprocess.run(arguments, capture_output=True, text=True, **run)
        result.update(json.loads(completed.stdout.strip().splitlines()[-1]))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--before", type=Path, help="a source tree holding duckdb_vectors/")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "static_startup.json")
    arguments = parser.parse_args()
    variants: dict[str, Path | None] = {"this checkout": None}
    if arguments.before:
        variants = {"before": arguments.before.resolve(), **variants}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as scratch:
        small, large = build_indexes(Path(scratch))
        for number in range(arguments.runs):
            names = list(variants) if number % 2 == 0 else list(reversed(variants))
            for name in names:
                runs[name].append(measure(variants[name], small, large))
    medians = {
        name: {key: statistics.median(float(run[key]) for run in done) for key in done[0]}
        for name, done in runs.items()
    }
    write_json(arguments.out, {"runs": runs, "medians": medians})
    print(json.dumps(medians, indent=1))


if __name__ == "__main__":
    main()
