"""Embed a document set on a Ray cluster and write the Parquet that ``index --from-parquet`` reads.

The input is a docs folder (chunked by duckdb-vectors' own chunkers, so chunk ids, titles and
metadata are those ``index PATH`` would give) or a Parquet / JSONL file of chunks already cut
(``chunk_id``, ``text``, optionally ``title``, ``source``, ``position``, ``metadata`` as a JSON
string). Embedding runs in a pool of Ray actors, each loading the model once; the output is one
row per chunk: ``chunk_id, text, title, source, position, metadata, embedding`` (float32s).

    pip install "ray[data]" "duckdb-vectors[parquet]"
    python examples/ray_embed_to_parquet.py ./docs out/ --model-path ./models/potion
    duckdb-vectors index --from-parquet 'out/*.parquet' --db docs.duckdb \\
        --backend fastembed:minishlab/potion-multilingual-128M --model-path ./models/potion

Ray starts a local cluster, or joins the one ``RAY_ADDRESS`` names; on a cluster, the input,
the output folder and ``--model-path`` must be local paths every node can read (a shared file
system), or leave out ``--model-path`` to let each worker download the model.
An example, not part of the package or its tests.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import ray
import ray.data
from ray.data import SaveMode

from duckdb_vectors import get_embedder
from duckdb_vectors.chunkers import SkipFile, default_chunker
from duckdb_vectors.models import Chunk
from duckdb_vectors.rows import titled_text

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


def file_chunks(row: dict[str, Any], root: str) -> list[dict[str, Any]]:
    """The chunks of one file as rows; a file the chunkers cannot index gives none."""
    source = Path(row["path"]).relative_to(root).as_posix()
    try:  # a chunker costs ~10 µs to build: one per file is simpler than shipping one
        chunks = default_chunker().chunk_bytes(row["bytes"], source)
    except SkipFile:
        return []
    return [chunk_row(chunk) for chunk in chunks]


def chunk_row(chunk: Chunk) -> dict[str, Any]:
    return {
        "chunk_id": chunk.chunk_id,
        "text": chunk.text,
        "title": chunk.title,
        "source": chunk.source,
        "position": chunk.position,
        "metadata": json.dumps(chunk.metadata),
    }


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
        root = str(source.resolve())
        extensions = sorted({extension.lstrip(".") for extension in default_chunker().extensions})
        files = ray.data.read_binary_files(root, include_paths=True, file_extensions=extensions)
        return files.flat_map(file_chunks, fn_kwargs={"root": root})
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
    print(
        f"next: duckdb-vectors index --from-parquet '{args.output}/*.parquet'"
        f" --db index.duckdb --backend {args.backend}"
    )


if __name__ == "__main__":
    main()
