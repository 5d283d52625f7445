"""What a write derives from each chunk and checks first: its id, etag, metadata JSON and the
text that is embedded (the row layout itself is ``chunk_table``'s)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .models import Chunk


@dataclass(frozen=True)
class ChunkColumns:
    """A batch of chunks to write, column by column, metadata serialised.

    ``put_vectors`` and ``index --from-parquet`` build it from their columns without a
    ``Chunk`` per row: validating one pydantic model per row, then reading its fields back one
    by one, was a sixth of a bulk write.
    """

    chunk_id: list[str]
    text: list[str]
    title: list[str | None]
    source: list[str | None]
    position: list[int | None]
    metadata_json: list[str]

    @classmethod
    def of(cls, chunks: list[Chunk]) -> ChunkColumns:
        return cls(
            [chunk.chunk_id for chunk in chunks],
            [chunk.text for chunk in chunks],
            [chunk.title for chunk in chunks],
            [chunk.source for chunk in chunks],
            [chunk.position for chunk in chunks],
            [metadata_json(chunk.metadata, i, chunk.chunk_id) for i, chunk in enumerate(chunks)],
        )

    def __len__(self) -> int:
        return len(self.chunk_id)

    def take(self, rows: list[int]) -> ChunkColumns:
        """The chunks at ``rows`` (ascending positions, each once)."""
        if len(rows) == len(self):  # every chunk, as in most writes
            return self
        return ChunkColumns(
            *(
                [values[row] for row in rows]
                for values in (getattr(self, f.name) for f in fields(self))
            )
        )

    def embedding_texts(self) -> list[str]:
        return [titled_text(title, text) for title, text in zip(self.title, self.text, strict=True)]


def embedding_text(chunk: Chunk) -> str:
    """What gets embedded and tokenized: the title breadcrumb as context, then the text."""
    return titled_text(chunk.title, chunk.text)


def titled_text(title: str | None, text: str) -> str:
    return f"{title}\n\n{text}" if title else text


def etags(titles: list[str | None], texts: list[str], vectors: np.ndarray | None) -> list[str]:
    """Each chunk's content hash: of its title and text, and of its vector when the caller
    gave it (``put_vectors``), so a new vector for the same text is a change."""
    pairs = zip(titles, texts, strict=True)
    if vectors is None:
        return [_digest(f"{title or ''}\x1f{text}") for title, text in pairs]
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    found = []
    for row, (title, text) in enumerate(pairs):
        digest = hashlib.sha256(f"{title or ''}\x1f{text}\x1f".encode("utf-8", "surrogatepass"))
        digest.update(rows[row])
        found.append(digest.hexdigest()[:32])
    return found


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def text_id(text: str) -> str:
    return "text:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def metadata_json(metadata: dict[str, Any], index: int, chunk_id: str) -> str:
    if not metadata:  # most chunks; json.dumps takes 4 us even for {}
        return "{}"
    try:
        return json.dumps(metadata, ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"metadata of chunk {index} ({chunk_id!r}) is not JSON-serialisable: {error}"
        ) from error


def check_utf8(text: str, what: str) -> str:
    """``text`` if it can be stored (a lone surrogate, e.g. from undecodable bytes, cannot)."""
    if text.isascii():  # most text, and much cheaper to confirm than to encode
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(f"{what} is not valid UTF-8 text (at character {error.start})") from None
    return text


# The columns of a ``ChunkColumns`` that hold text.
TEXT_COLUMNS = ("chunk_id", "text", "title", "source", "metadata_json")


def check_text_fields(batch: ChunkColumns) -> None:
    """Every text field of every chunk can be stored (see ``check_utf8``)."""
    for name in TEXT_COLUMNS:
        values = getattr(batch, name)
        if "".join(value for value in values if value is not None).isascii():
            continue  # most columns, confirmed at once
        what = "metadata" if name == "metadata_json" else name
        for index, value in enumerate(values):
            if value is not None:
                check_utf8(value, f"{what} of chunk {index}")


def check_unique_ids(chunk_ids: list[str], seen: set[str] | None = None) -> None:
    """Ids must be non-empty and appear once in a write (``seen``: ids of its earlier batches,
    updated here)."""
    counts = Counter(chunk_ids)
    duplicates = [chunk_id for chunk_id, count in counts.items() if count > 1]
    if seen is not None:
        duplicates += [chunk_id for chunk_id in counts if chunk_id in seen]
        seen.update(counts)
    if duplicates:
        raise ValueError(f"duplicate ids in one write: {duplicates[:5]}")
    if "" in counts:
        raise ValueError("chunk ids must be non-empty strings")
