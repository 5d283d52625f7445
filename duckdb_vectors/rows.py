"""What a write derives from each chunk and checks first: its id, etag, metadata JSON and the
text that is embedded (the row layout itself is ``chunk_table``'s)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from .models import GIVEN_FIELDS, Chunk, value_types


@dataclass(frozen=True)
class ChunkColumns:
    """A batch of chunks to write, column by column: a list per field a writer gives
    (``models.GIVEN_FIELDS``), each value as the table stores it (the metadata as JSON text).

    Bulk writes (``put_vectors``, ``index --from-parquet``) build it without a ``Chunk`` per
    row, whose validation would be a large share of the write.
    """

    columns: dict[str, list[Any]]

    def __post_init__(self) -> None:
        if self.columns.keys() != set(GIVEN_FIELDS):
            raise TypeError(f"a write has the columns {GIVEN_FIELDS}, not {tuple(self.columns)}")

    @classmethod
    def of(cls, chunks: list[Chunk]) -> ChunkColumns:
        columns = {
            name: [getattr(chunk, name) for chunk in chunks]
            for name in GIVEN_FIELDS
            if name != "metadata"
        }
        columns["metadata"] = [
            metadata_json(chunk.metadata, i, chunk.chunk_id) for i, chunk in enumerate(chunks)
        ]
        return cls(columns)

    # The columns a write reads by name.
    @property
    def chunk_id(self) -> list[str]:
        return self.columns["chunk_id"]

    @property
    def title(self) -> list[str | None]:
        return self.columns["title"]

    @property
    def text(self) -> list[str]:
        return self.columns["text"]

    def __len__(self) -> int:
        return len(self.chunk_id)

    def take(self, rows: list[int]) -> ChunkColumns:
        """The chunks at ``rows`` (ascending positions, each once)."""
        if len(rows) == len(self):  # every chunk, as in most writes
            return self
        return ChunkColumns(
            {name: [values[row] for row in rows] for name, values in self.columns.items()}
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


def _digest(text: str, length: int = 32) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def text_id(text: str) -> str:
    return "text:" + _digest(text, 16)


def metadata_json(metadata: dict[str, Any], index: int, chunk_id: str) -> str:
    if not metadata:  # most chunks
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


# The columns of a write that hold text: the metadata's JSON, and every str field.
TEXT_COLUMNS = tuple(
    name for name in GIVEN_FIELDS if name == "metadata" or str in value_types(name)
)


def check_text_fields(batch: ChunkColumns) -> None:
    """Every text field of every chunk can be stored (see ``check_utf8``)."""
    for name in TEXT_COLUMNS:
        values = batch.columns[name]
        if "".join(value for value in values if value is not None).isascii():
            continue  # most columns, confirmed at once
        for index, value in enumerate(values):
            if value is not None:
                check_utf8(value, f"{name} of chunk {index}")


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
