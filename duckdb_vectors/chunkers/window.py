"""Chunks sized to the embedding model's window.

A model embeds at most its window of tokens (512 for most BERT-style transformers, and for
static models as fastembed runs them): past it, a chunk's tail is in BM25 but not in its vector.
A chunk whose title and text need more than one window is split, on paragraphs, then
sentences, into pieces that each fit, keeping its title and metadata; the file's chunks are
then numbered again. With MiniLM's tokenizer, 14% of the Ray docs' 2,000-character chunks
needed more than one window (mostly code).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ..models import Chunk
from ..rows import embedding_text
from .base import split_text

# How many windows each text needs (1 when it fits): ``Embedder.windows``.
WindowCounter = Callable[[Sequence[str]], list[int]]
# A piece is split again while it does not fit: a dense run of code can need a second round.
_ROUNDS = 4


def fit_to_window(chunks: list[Chunk], windows: WindowCounter) -> tuple[list[Chunk], int]:
    """``chunks`` with each one that needs more than one window split into pieces that fit,
    numbered again in order; and how many were split."""
    fitted: list[Chunk] = []
    split = 0
    for chunk, needed in zip(chunks, windows([embedding_text(c) for c in chunks]), strict=True):
        pieces = [chunk] if needed <= 1 else _split(chunk, windows)
        split += len(pieces) > 1
        fitted.extend(pieces)
    if not split:
        return chunks, 0
    return [_numbered(chunk, position) for position, chunk in enumerate(fitted)], split


def _split(chunk: Chunk, windows: WindowCounter) -> list[Chunk]:
    pieces = [chunk.text]
    for _ in range(_ROUNDS):
        texts = [embedding_text(chunk.model_copy(update={"text": text})) for text in pieces]
        counts = windows(texts)
        if max(counts) <= 1:
            break
        pieces = [
            part
            for text, count in zip(pieces, counts, strict=True)
            for part in (
                [text] if count <= 1 else split_text(text, math.ceil(len(text) / (count + 1)))
            )
        ]
    return [chunk.model_copy(update={"text": text}) for text in pieces]


def _numbered(chunk: Chunk, position: int) -> Chunk:
    """The chunk at ``position`` of its file; an id of the form ``<source>#<position>`` (the
    built-in chunkers') follows it."""
    update: dict[str, object] = {"position": position}
    if chunk.source is not None and chunk.chunk_id.startswith(f"{chunk.source}#"):
        update["chunk_id"] = f"{chunk.source}#{position}"
    return chunk.model_copy(update=update)
