"""How chunks become rows: ids, etags, metadata JSON, the embedded text, and postings."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import numpy as np

from .db import column
from .models import Chunk
from .tokenizer import tokenize


def new_rows(
    chunks: list[Chunk],
    keys: np.ndarray,
    etags: list[str],
    metadata_json: list[str],
    embeddings: np.ndarray,
) -> dict[str, np.ndarray]:
    """Columns of the chunk rows, ready for one bulk INSERT (``tokens``: see ``token_columns``)."""
    token_counts, joined_tokens = token_columns([embedding_text(chunk) for chunk in chunks])
    return {
        "key": keys,
        "chunk_id": column([chunk.chunk_id for chunk in chunks]),
        "text": column([chunk.text for chunk in chunks]),
        "source": column([chunk.source for chunk in chunks]),
        "position": column([chunk.position for chunk in chunks], "int32"),
        "title": column([chunk.title for chunk in chunks]),
        "metadata": column(metadata_json),
        "etag": column(etags),
        "token_count": token_counts,
        "tokens": joined_tokens,
        "embedding": column(list(np.ascontiguousarray(embeddings, dtype=np.float32))),
    }


def token_columns(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each text's BM25 token count, and its tokens joined by spaces (a token never holds one).

    The postings are counted from the joined tokens in SQL, which is faster than a Counter per
    chunk and hands DuckDB one string per chunk instead of one per posting.
    """
    token_counts: list[int] = []
    joined_tokens: list[str] = []
    for text in texts:
        tokens = tokenize(text)
        token_counts.append(len(tokens))
        joined_tokens.append(" ".join(tokens))
    return np.asarray(token_counts, dtype=np.int32), column(joined_tokens)


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
