"""Would merging small neighbouring sections help? Index a docs tree with them merged.

Each file's chunks, in order: a chunk joins the one before it when either is shorter than
``--small`` characters and the two fit the chunkers' 2,000; the joined section's heading is
kept in the text. Then run ``bench/docsqa.py`` on the index:

    python bench/docsqa_merged_sections.py --small 300 --db bench/out/merged-300/static.duckdb
    python bench/docsqa.py --models static --workdir bench/out/merged-300 --label merged-300

``--small 0`` merges nothing (the baseline, indexed the same way).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from docsqa import MODELS, RAY

from duckdb_vectors import VectorStore, index_folder
from duckdb_vectors.chunkers import DEFAULT_MAX_CHARS, default_chunker
from duckdb_vectors.models import Chunk

INNER = default_chunker()


def heading(title: str | None) -> str:
    return (title or "").split(" > ")[-1]


def merged(chunks: list[Chunk], small: int) -> list[Chunk]:
    kept: list[Chunk] = []
    for chunk in chunks:
        if kept:
            before = kept[-1]
            joiner = f"\n\n{heading(chunk.title)}\n" if chunk.title != before.title else "\n\n"
            text = before.text + joiner + chunk.text
            if min(len(before.text), len(chunk.text)) < small and len(text) <= DEFAULT_MAX_CHARS:
                kept[-1] = before.model_copy(update={"text": text})
                continue
        kept.append(chunk)
    return [
        chunk.model_copy(update={"position": i, "chunk_id": f"{chunk.source}#{i}"})
        for i, chunk in enumerate(kept)
    ]


class MergingChunker:
    """The default chunker, its chunks then merged."""

    def __init__(self, small: int) -> None:
        self.small = small

    def __getattr__(self, name: str) -> object:  # mime_type, can_index: the default's
        return getattr(INNER, name)

    def chunk(self, text: str, source: str) -> list[Chunk]:
        return merged(INNER.chunk(text, source), self.small)

    def chunk_bytes(self, data: bytes, source: str) -> list[Chunk]:
        return merged(INNER.chunk_bytes(data, source), self.small)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, required=True, help="merge chunks shorter than this")
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--tree", type=Path, default=RAY / "docs" / "doc" / "source")
    arguments = parser.parse_args()
    arguments.db.parent.mkdir(parents=True, exist_ok=True)
    model = MODELS["static"]
    with VectorStore(arguments.db, model.backend, model_path=model.path) as store:
        chunker = MergingChunker(arguments.small)
        index_folder(store, arguments.tree, chunker=chunker, progress=False)  # type: ignore[arg-type]
        print(f"{store.count()} chunks")


if __name__ == "__main__":
    main()
