"""Embed a document set on a Ray cluster and write the Parquet that ``index --from-parquet`` reads.

The input is a docs folder or a Parquet / JSONL file of chunks already cut (``chunk_id``,
``text``, optionally ``title``, ``source``, ``position``, ``metadata`` as a JSON string). A
folder's files are those ``index FOLDER`` reads, chunked as it chunks them
(``duckdb_vectors.document_chunks.FolderChunks``), so the chunk ids, texts, titles and metadata
are those ``index FOLDER`` writes. Embedding runs in a pool of Ray actors, each loading the
model once; the output is one row per chunk: ``chunk_id, text, title, source, position,
metadata, embedding`` (float32s).

    pip install "ray[data]" "duckdb-vectors[index,parquet]"   # [onnx] too for a transformer
    python examples/ray_embed_to_parquet.py ./docs out/ --model-path ./models/potion
    duckdb-vectors index --from-parquet 'out/*.parquet' --db docs.duckdb \\
        --backend fastembed:minishlab/potion-multilingual-128M --model-path ./models/potion

Ray starts a local cluster, or joins the one ``RAY_ADDRESS`` names; on a cluster, the input,
the output folder and ``--model-path`` must be local paths every node can read (a shared file
system), or leave out ``--model-path`` to let each worker download the model.
tests/test_ray_example.py runs it on a Ray cluster of its own and checks that the index it
makes equals ``index FOLDER``'s (``make ray`` installs Ray for it, in .venv-ray).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import ray
import ray.data
from ray.data import SaveMode

from duckdb_vectors import get_embedder
from duckdb_vectors.document_chunks import FolderChunks
from duckdb_vectors.errors import SkipFile
from duckdb_vectors.rows import ChunkColumns, titled_text

DEFAULT_BACKEND = "fastembed:minishlab/potion-multilingual-128M"

# The columns `index --from-parquet` reads, with the Arrow type written for each. Casting every
# batch to these keeps the files' schemas equal even where a batch has only null titles.
COLUMNS = {
    "chunk_id": pa.string(),
    "text": pa.string(),
    "title": pa.string(),
    "source": pa.string(),
    "position": pa.int32(),
    "metadata": pa.string(),
}
CHUNK_FILE_TYPES = {".parquet": ray.data.read_parquet, ".jsonl": ray.data.read_json}


def file_chunks(row: dict[str, Any], folder: FolderChunks) -> list[dict[str, Any]]:
    """The chunks of one file as rows; a file ``index`` would leave out gives none, and says
    why on stderr as ``index`` does (Ray shows a worker's stderr on the driver's)."""
    file = row["file"]
    try:
        chunks = folder.chunks(file)
    except SkipFile as reason:
        print(f"{file}: skipped: {reason}", file=sys.stderr)
        return []
    except Exception as error:  # as in `index`, one bad file does not stop the run
        print(f"{file}: failed: {type(error).__name__}: {error}", file=sys.stderr)
        return []
    columns = ChunkColumns.of(chunks).columns  # metadata as JSON text, as the index stores it
    return [{name: values[at] for name, values in columns.items()} for at in range(len(chunks))]


class Embed:
    """A Ray actor's embedding step: the model loads once per actor, then embeds each batch."""

    def __init__(self, backend: str, model_path: str | None) -> None:
        self.embedder = get_embedder(backend, Path(model_path) if model_path else None)

    def __call__(self, batch: pa.Table) -> pa.Table:
        texts = batch.column("text").to_pylist()
        has_title = "title" in batch.column_names
        titles = batch.column("title").to_pylist() if has_title else [None] * len(texts)
        # The text `index PATH` embeds: the title breadcrumb as context, then the chunk.
        inputs = [titled_text(title, text) for title, text in zip(titles, texts, strict=True)]
        vectors = self.embedder.embed(inputs).astype("float32")
        embedding = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1])
        columns = {
            name: batch.column(name).cast(kind)
            for name, kind in COLUMNS.items()
            if name in batch.column_names
        }
        return pa.table({**columns, "embedding": embedding})


def read_chunks(source: Path) -> ray.data.Dataset:
    """Rows of chunks to embed, from a docs folder or a file of chunks."""
    if source.is_dir():
        folder = FolderChunks.of(source)
        for file, reason in folder.refused:
            print(f"{file}: skipped: {reason}", file=sys.stderr)
        files = ray.data.from_items([{"file": file} for file in folder.files])
        return files.flat_map(file_chunks, fn_kwargs={"folder": folder})
    reader = CHUNK_FILE_TYPES.get(source.suffix)
    if reader is None or not source.is_file():
        raise SystemExit(f"{source}: give a docs folder, or a .parquet or .jsonl file of chunks")
    chunks = reader(str(source.resolve()))
    missing = {"chunk_id", "text"} - set(chunks.schema().names)
    if missing:
        raise SystemExit(f"{source} has no {', '.join(sorted(missing))} column")
    return chunks.select_columns([name for name in COLUMNS if name in chunks.schema().names])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input", type=Path, help="a docs folder, or a .parquet/.jsonl of chunks")
    parser.add_argument("output", type=Path, help="the folder for the Parquet files (replaced)")
    parser.add_argument("--backend", default=DEFAULT_BACKEND, help="the model, as for `index`")
    parser.add_argument("--model-path", help="a local copy of the model's files")
    parser.add_argument(
        "--workers", type=int, help="embedding actors (default: one per CPU but one)"
    )
    parser.add_argument("--batch-size", type=int, default=1024, help="chunks per batch")
    args = parser.parse_args()

    started = time.monotonic()
    ray.init()
    # Each actor holds a CPU for its lifetime: leave one for reading and chunking, or the read
    # tasks wait forever for a CPU the actors hold.
    workers = args.workers or max(1, int(ray.cluster_resources()["CPU"]) - 1)
    chunks = read_chunks(args.input)
    embedded = chunks.map_batches(
        Embed,
        fn_constructor_kwargs={"backend": args.backend, "model_path": args.model_path},
        batch_format="pyarrow",
        batch_size=args.batch_size,
        compute=ray.data.ActorPoolStrategy(size=workers),
    )
    embedded.write_parquet(str(args.output.resolve()), mode=SaveMode.OVERWRITE)
    files = sorted(args.output.glob("*.parquet"))
    rows = sum(pq.ParquetFile(file).metadata.num_rows for file in files)
    seconds = time.monotonic() - started
    print(f"{rows} chunks in {len(files)} files under {args.output}, {seconds:.1f} s")
    model_path = f" --model-path {args.model_path}" if args.model_path else ""
    print(
        f"next: duckdb-vectors index --from-parquet '{args.output}/*.parquet'"
        f" --db index.duckdb --backend {args.backend}{model_path}"
    )


if __name__ == "__main__":
    main()
