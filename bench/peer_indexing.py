"""Indexing a folder, next to the one peer that indexes folders: raghilda.

The other peers (LanceDB, Chroma, sqlite-vec, bm25s) are stores: reading, chunking and
re-indexing only what changed is left to the user's own loop, so there is nothing of theirs to
time. raghilda has the whole pipeline: ``read_as_markdown`` (MarkItDown), its
``MarkdownChunker``, ``DuckDBStore.ingest`` (an upsert that skips a document whose text and
chunks are unchanged) and ``build_index`` (DuckDB's fts and vss extensions), so it is run as its
documentation shows, with the same static model through fastembed.

Both index the DuckDB docs (425 Markdown files), each run in a fresh process with the model
loaded before the clock starts, alternating ``--repeat`` times; then the same folder again,
unchanged. Chunkers differ (raghilda's default is 1,600-character chunks with 50% overlap), so
files/s compares the pipelines; chunks/s is each one's own. A re-run's chunks are those it
chunked again: raghilda reads and chunks every file before it can tell that one is unchanged.

    python bench/peer_indexing.py               # 3 repeats, about 8 minutes
    python bench/peer_indexing.py --repeat 5 --folder data

Run it with the main venv; raghilda runs under ``--raghilda-python`` (see bench/peers.py).
Writes bench/out/peer_indexing.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from common import DOCS, MODEL, OUT, write_json
from index_throughput import DEFAULT_BACKEND, INDEX_RUN, median_run, run

RAGHILDA_PYTHON = Path("/work/peers-venv-duckdb15/bin/python")

RAGHILDA_RUN = """
import json, resource, sys, time
from pathlib import Path
from fastembed import TextEmbedding
from markitdown import StreamInfo
from raghilda.chunker import MarkdownChunker
from raghilda.embedding import EmbeddingProvider, EmbedInputType, register_embedding_provider
from raghilda.read import read_as_markdown
from raghilda.store import DuckDBStore

db, folder, model_path, model_name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]

@register_embedding_provider("BenchFastembed")
class Fastembed(EmbeddingProvider):
    def __init__(self, name, path):
        self.name, self.path = name, path
        self.model = TextEmbedding(name, specific_model_path=path)
    def embed(self, x, input_type=EmbedInputType.DOCUMENT):
        if input_type == EmbedInputType.QUERY:
            return [v.tolist() for v in self.model.query_embed(list(x))]
        return [v.tolist() for v in self.model.embed(list(x))]
    def get_config(self):
        return {"type": "BenchFastembed", "name": self.name, "path": self.path}
    @classmethod
    def from_config(cls, config):
        return cls(config["name"], config["path"])

provider = Fastembed(model_name, model_path)
provider.embed(["load the model"])
existed = db.exists()
started, cpu_started = time.perf_counter(), time.process_time()
store = DuckDBStore.connect(db) if existed else DuckDBStore.create(db, embed=provider)
chunker = MarkdownChunker()
chunks, retried = 0, []
def read(path):
    try:
        return read_as_markdown(str(path))
    except Exception:  # MarkItDown guesses the charset from the file's start; say it, as its
        retried.append(path.name)  # error message suggests
        return read_as_markdown(str(path), stream_info=StreamInfo(charset="utf-8"))
def documents():
    global chunks
    for path in sorted(folder.rglob("*.md")):
        document = chunker.chunk(read(path))
        chunks += len(document.chunks)
        yield document
summary = store.ingest(documents())
ingested = time.perf_counter()
store.build_index()
store.con.close()
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "ingest_s": ingested - started,
                  "build_index_s": seconds - (ingested - started),
                  "cpu_s": time.process_time() - cpu_started,
                  "files": summary.inserted + summary.replaced + summary.skipped,
                  "chunks": chunks, "skipped": summary.skipped, "charset_retries": retried,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--folder", help="a sub-folder of the docs, e.g. data (26 files)")
    parser.add_argument("--raghilda-python", type=Path, default=RAGHILDA_PYTHON)
    parser.add_argument("--out", type=Path, default=OUT / "peer_indexing.json")
    arguments = parser.parse_args()
    if not arguments.raghilda_python.exists():
        sys.exit(f"no {arguments.raghilda_python}: pass --raghilda-python (see bench/peers.py)")
    docs = str(DOCS / arguments.folder if arguments.folder else DOCS)
    model = (str(MODEL), DEFAULT_BACKEND)
    raghilda_model = (str(MODEL), DEFAULT_BACKEND.removeprefix("fastembed:"))
    runs: dict[str, list[dict]] = {name: [] for name in RUN_NAMES}
    with tempfile.TemporaryDirectory() as scratch:
        for attempt in range(arguments.repeat):
            ours = Path(scratch) / f"ours{attempt}.duckdb"
            theirs = Path(scratch) / f"raghilda{attempt}.duckdb"
            runs["duckdb-vectors index"].append(run(INDEX_RUN, str(ours), docs, *model))
            runs["duckdb-vectors re-run, nothing changed"].append(
                run(INDEX_RUN, str(ours), docs, *model)
            )
            python = arguments.raghilda_python
            runs["raghilda ingest + build_index"].append(
                run(RAGHILDA_RUN, str(theirs), docs, *raghilda_model, python=python)
            )
            runs["raghilda re-run, nothing changed"].append(
                run(RAGHILDA_RUN, str(theirs), docs, *raghilda_model, python=python)
            )
    results = {name: median_run(entries) for name, entries in runs.items()}
    write_json(arguments.out, {"folder": docs, "repeat": arguments.repeat, "results": results})
    print_table(results)


RUN_NAMES = (
    "duckdb-vectors index",
    "duckdb-vectors re-run, nothing changed",
    "raghilda ingest + build_index",
    "raghilda re-run, nothing changed",
)


def print_table(results: dict[str, dict]) -> None:
    print(
        "| run | files | unchanged | chunks | median s | files/s | chunks/s | CPU s | peak RSS MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        chunks = r["chunks"]
        unchanged = r.get("unchanged_files", r.get("skipped"))
        print(
            f"| {name} | {r['files']} | {unchanged} | {chunks} | {r['seconds']:.2f} |"
            f" {r['files'] / r['seconds']:.0f} | {chunks / r['seconds']:.0f} |"
            f" {r['cpu_s']:.2f} | {r['peak_rss_mb']:.0f} |"
        )
    ours = results["duckdb-vectors index"]["seconds"]
    theirs = results["raghilda ingest + build_index"]["seconds"]
    print(f"\nraghilda / duckdb-vectors, first index: {theirs / ours:.1f}x")


if __name__ == "__main__":
    main()
