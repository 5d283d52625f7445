"""Indexing throughput: the DuckDB docs folder (425 Markdown files), once, again, and x20.

Each scenario runs in a fresh process so its peak RSS is its own. Reported: files/s, chunks/s,
seconds, peak RSS; the same chunks embedded alone (no storage) as the embedder's limit.

    python bench/index_throughput.py              # 1x, no-change re-run, 20x copies
    python bench/index_throughput.py --copies 5

Writes bench/out/index_throughput.json and prints a Markdown table.
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

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("DUCKDB_VECTORS_SHARED", HERE.parent.parent / "shared"))
DOCS = SHARED / "evaldata" / "docs" / "duckdb" / "docs" / "current"
MODEL = SHARED / "models" / "static-256-wordllama"

INDEX_RUN = """
import json, resource, sys, time
from duckdb_vectors import VectorStore, index_folder
store = VectorStore(sys.argv[1], model_path=sys.argv[3])
started = time.perf_counter()
summary = index_folder(store, sys.argv[2])
store.close()
seconds = time.perf_counter() - started
chunks = summary.chunks_added + summary.chunks_updated + summary.chunks_unchanged
print(json.dumps({"seconds": seconds, "files": summary.files_seen, "chunks": chunks,
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
backend = "fastembed:minishlab/potion-multilingual-128M"
embedder = get_embedder(backend, model_path=Path(sys.argv[2]))
embedder.embed(["warm"])
started = time.perf_counter()
for start in range(0, len(texts), 512):
    embedder.embed(texts[start:start + 512])
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "chunks": len(texts),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(script: str, *arguments: str) -> dict:
    environment = {**os.environ, "HF_HUB_OFFLINE": "1"}
    completed = subprocess.run(
        [sys.executable, "-c", script, *arguments],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "index_throughput.json")
    arguments = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "docs.duckdb"
        results["embedding only (1x)"] = run(EMBED_ONLY, str(DOCS), str(MODEL))
        results["index 1x"] = run(INDEX_RUN, str(db), str(DOCS), str(MODEL))
        results["re-run, no change"] = run(INDEX_RUN, str(db), str(DOCS), str(MODEL))
        copies = Path(scratch) / "copies"
        for n in range(arguments.copies):
            shutil.copytree(DOCS, copies / f"copy{n:02d}")
        # Make each copy's text distinct so nothing is reused by content.
        for n, path in enumerate(sorted(copies.rglob("*.md"))):
            path.write_text(path.read_text() + f"\n\nCopy marker {n}.\n")
        big = Path(scratch) / "copies.duckdb"
        results[f"index {arguments.copies}x"] = run(INDEX_RUN, str(big), str(copies), str(MODEL))
        results[f"re-run {arguments.copies}x, no change"] = run(
            INDEX_RUN, str(big), str(copies), str(MODEL)
        )
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(results, indent=1))
    print("| run | files | chunks | embedded | seconds | files/s | chunks/s | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        files = r.get("files", "")
        rate = f"{files / r['seconds']:.0f}" if files else ""
        print(
            f"| {name} | {files} | {r['chunks']} | {r.get('embedded', r['chunks'])} |"
            f" {r['seconds']:.2f} | {rate} | {r['chunks'] / r['seconds']:.0f} |"
            f" {r['peak_rss_mb']:.0f} |"
        )


if __name__ == "__main__":
    main()
