"""Indexing throughput: the DuckDB docs folder (425 Markdown files) against embedding alone.

Each run is a fresh process (so its peak RSS is its own) with the model loaded before the clock
starts. Embedding alone (the same chunks through the same embedder, no storage) and a full index
run alternate ``--repeat`` times, so both see the same machine; medians are reported with their
ratio. Then a no-change re-run, and a folder of ``--copies`` distinct copies. Each run also
reports the CPU seconds of the whole process (all threads) and how long the embedder was busy:
in an index run it embeds in a thread beside the chunking, tokenizing and writing.

    python bench/index_throughput.py                      # static model, 3 repeats, 20 copies
    python bench/index_throughput.py --copies 0 --folder data --backend \\
        fastembed:sentence-transformers/all-MiniLM-L6-v2 \\
        --model-path ../shared/models/onnx-minilm-l6-v2-int8   # a transformer model

Writes bench/out/index_throughput[-<model>].json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import DOCS, MODEL, OUT, write_json

DEFAULT_BACKEND = "fastembed:minishlab/potion-multilingual-128M"

INDEX_RUN = """
import json, resource, sys, time
from duckdb_vectors import VectorStore, index_folder
store = VectorStore(sys.argv[1], sys.argv[4], model_path=sys.argv[3])
embed = store.embedder.embed
embed(["load the model"])
busy = []
def timed_embed(texts):  # how long the embedding thread is busy during the run
    begun = time.perf_counter()
    vectors = embed(texts)
    busy.append(time.perf_counter() - begun)
    return vectors
store.embedder.embed = timed_embed
started, cpu_started = time.perf_counter(), time.process_time()
summary = index_folder(store, sys.argv[2])
store.close()
seconds = time.perf_counter() - started
chunks = summary.chunks_added + summary.chunks_updated + summary.chunks_unchanged
print(json.dumps({"seconds": seconds, "cpu_s": time.process_time() - cpu_started,
                  "embedding_busy_s": sum(busy), "files": summary.files_seen,
                  "unchanged_files": summary.files_unchanged, "chunks": chunks,
                  "embedded": summary.chunks_embedded,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

EMBED_ONLY = """
import json, resource, sys, time
from pathlib import Path
from duckdb_vectors import get_embedder
from duckdb_vectors.chunkers import default_chunker
from duckdb_vectors.rows import embedding_text
chunker = default_chunker()
texts = []
for path in sorted(Path(sys.argv[1]).rglob("*.md")):
    texts += [embedding_text(c) for c in chunker.chunk_bytes(path.read_bytes(), path.name)]
embedder = get_embedder(sys.argv[3], model_path=Path(sys.argv[2]))
embedder.embed(["load the model"])
started, cpu_started = time.perf_counter(), time.process_time()
for start in range(0, len(texts), 512):
    embedder.embed(texts[start:start + 512])
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "cpu_s": time.process_time() - cpu_started,
                  "embedding_busy_s": seconds, "chunks": len(texts),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(script: str, *arguments: str, python: Path = Path(sys.executable)) -> dict:
    """Run ``script`` in a fresh ``python`` process; its last stdout line is a JSON result."""
    environment = {**os.environ, "HF_HUB_OFFLINE": "1"}
    completed = subprocess.run(
        [str(python), "-c", script, *arguments], capture_output=True, text=True, env=environment
    )
    if completed.returncode:
        sys.exit(f"a benchmark run under {python} failed:\n{completed.stderr[-2000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def median_run(runs: list[dict]) -> dict:
    """The run with the median time, with every run's seconds kept."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    return {**ordered[len(ordered) // 2], "all_seconds": [round(r["seconds"], 3) for r in runs]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--copies", type=int, default=20, help="0 skips the copies run")
    parser.add_argument("--backend", default=DEFAULT_BACKEND)
    parser.add_argument("--model-path", type=Path, default=MODEL)
    parser.add_argument("--folder", help="a sub-folder of the docs, e.g. data (26 files)")
    parser.add_argument("--out", type=Path)
    arguments = parser.parse_args()
    model = (str(arguments.model_path), arguments.backend)
    docs = DOCS / arguments.folder if arguments.folder else DOCS
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "docs.duckdb"
        embedding, indexing, rerun = [], [], []
        for _ in range(arguments.repeat):
            embedding.append(run(EMBED_ONLY, str(docs), *model))
            db.unlink(missing_ok=True)
            indexing.append(run(INDEX_RUN, str(db), str(docs), *model))
            rerun.append(run(INDEX_RUN, str(db), str(docs), *model))
        results["embedding alone (same chunks, no storage)"] = median_run(embedding)
        results["index 1x"] = median_run(indexing)
        results["re-run, nothing changed"] = median_run(rerun)
        if arguments.copies:
            results.update(index_copies(Path(scratch), arguments.copies, model))
    results["index 1x"]["x_embedding_alone"] = round(
        results["index 1x"]["seconds"]
        / results["embedding alone (same chunks, no storage)"]["seconds"],
        2,
    )
    suffix = "" if arguments.backend == DEFAULT_BACKEND else "-" + arguments.model_path.name
    write_json(arguments.out or OUT / f"index_throughput{suffix}.json", results)
    print_table(results)


def index_copies(scratch: Path, copies: int, model: tuple[str, str]) -> dict[str, dict]:
    folder = scratch / "copies"
    for n in range(copies):
        shutil.copytree(DOCS, folder / f"copy{n:02d}")
    # Make each copy's text distinct so nothing is reused by content.
    for n, path in enumerate(sorted(folder.rglob("*.md"))):
        path.write_text(path.read_text() + f"\n\nCopy marker {n}.\n")
    db = scratch / "copies.duckdb"
    return {
        f"index {copies}x copies": run(INDEX_RUN, str(db), str(folder), *model),
        f"re-run {copies}x, nothing changed": run(INDEX_RUN, str(db), str(folder), *model),
    }


def print_table(results: dict[str, dict]) -> None:
    print(
        "| run | files | chunks | embedded | median s | CPU s | embedding busy s | files/s"
        " | chunks/s | peak RSS MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        files = r.get("files", "")
        rate = f"{files / r['seconds']:.0f}" if files else ""
        print(
            f"| {name} | {files} | {r['chunks']} | {r.get('embedded', r['chunks'])} |"
            f" {r['seconds']:.2f} | {r['cpu_s']:.2f} | {r['embedding_busy_s']:.2f} | {rate} |"
            f" {r['chunks'] / r['seconds']:.0f} | {r['peak_rss_mb']:.0f} |"
        )
    print(f"\nindex 1x / embedding alone: {results['index 1x']['x_embedding_alone']}x")


if __name__ == "__main__":
    main()
