"""What a write derives from each chunk and checks first: its id, etag, metadata JSON and the
text that is embedded (the row layout itself is ``chunk_table``'s)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import numpy as np

from .models import Chunk


def embedding_text(chunk: Chunk) -> str:
    """What gets embedded and tokenized: the title breadcrumb as context, then the text."""
    return titled_text(chunk.title, chunk.text)


def titled_text(title: str | None, text: str) -> str:
    return f"{title}\n\n{text}" if title else text


def etag(chunk: Chunk, vector: np.ndarray | None) -> str:
    digest = hashlib.sha256()
    digest.update((chunk.title or "").encode("utf-8", "surrogatepass"))
    digest.update(b"\x1f")
    digest.update(chunk.text.encode("utf-8", "surrogatepass"))
    if vector is not None:
        digest.update(b"\x1f")
        digest.update(np.ascontiguousarray(vector, dtype=np.float32).tobytes())
    return digest.hexdigest()[:32]


def text_id(text: str) -> str:
    return "text:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def metadata_json(chunk: Chunk, index: int) -> str:
    if not chunk.metadata:  # most chunks; json.dumps takes 4 us even for {}
        return "{}"
    try:
        return json.dumps(chunk.metadata, ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"metadata of chunk {index} ({chunk.chunk_id!r}) is not JSON-serialisable: {error}"
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


def check_text_fields(chunks: list[Chunk], metadata: list[str]) -> None:
    for index, chunk in enumerate(chunks):
        for name in ("chunk_id", "text", "title", "source"):
            value = getattr(chunk, name)
            if value is not None:
                check_utf8(value, f"{name} of chunk {index}")
        check_utf8(metadata[index], f"metadata of chunk {index}")


def check_unique_ids(chunks: list[Chunk], seen: set[str] | None = None) -> None:
    """Ids must be non-empty and appear once in a write (``seen``: ids of its earlier batches,
    updated here)."""
    counts = Counter(chunk.chunk_id for chunk in chunks)
    duplicates = [chunk_id for chunk_id, count in counts.items() if count > 1]
    if seen is not None:
        duplicates += [chunk_id for chunk_id in counts if chunk_id in seen]
        seen.update(counts)
    if duplicates:
        raise ValueError(f"duplicate ids in one write: {duplicates[:5]}")
    if any(not chunk.chunk_id for chunk in chunks):
        raise ValueError("chunk ids must be non-empty strings")
