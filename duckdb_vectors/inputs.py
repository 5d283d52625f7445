"""What SDK callers pass, checked at the boundary: each problem is one ``ValueError`` (or
``TypeError``) that names the argument and what is allowed.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import ValidationError

from . import rows
from .index.terms import ParsedQuery, parse_query
from .models import Chunk
from .search.answer import MATCH_MODES

# The most results one call returns (a guard against a runaway top_k, not a tuning knob).
MAX_RESULTS = 10_000


def parsed_query(text: str, language: str) -> ParsedQuery:
    """The query's text, checked, and parsed for the layers below (``terms.parse_query``)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the query text must be a non-empty string")
    return parse_query(rows.check_utf8(text, "the query"), language)


def check_match(match: str) -> None:
    if match not in MATCH_MODES:
        raise ValueError(f"match must be one of {', '.join(MATCH_MODES)}, got {match!r}")


def checked_ids(keys: Sequence[str]) -> list[str]:
    return [rows.check_utf8(key, "an id") if isinstance(key, str) else str(key) for key in keys]


def check_count(name: str, value: int) -> None:
    """``top_k`` or ``limit``: an integer from 1 to ``MAX_RESULTS``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RESULTS:
        raise ValueError(f"{name} must be an integer from 1 to {MAX_RESULTS}, got {value!r}")


def text_chunks(
    texts: Sequence[str],
    ids: Sequence[str] | None,
    metadatas: Sequence[dict[str, Any] | None] | None,
    titles: Sequence[str | None] | None,
    sources: Sequence[str | None] | None,
    positions: Sequence[int | None] | None,
) -> list[Chunk]:
    """The chunks ``add_texts`` writes: one per text, ids defaulting to a hash of the text."""
    columns = {
        "ids": ids,
        "metadatas": metadatas,
        "titles": titles,
        "sources": sources,
        "positions": positions,
    }
    for name, values in columns.items():
        if values is not None and len(values) != len(texts):
            raise ValueError(f"{name} has {len(values)} items but texts has {len(texts)}")
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{index}] must be a string, got {type(text).__name__}")
    chunk_ids = list(ids) if ids is not None else [rows.text_id(text) for text in texts]
    return [
        Chunk(
            chunk_id=chunk_ids[i],
            text=texts[i],
            metadata=(metadatas[i] if metadatas else None) or {},
            title=titles[i] if titles else None,
            source=sources[i] if sources else None,
            position=positions[i] if positions else None,
        )
        for i in range(len(texts))
    ]


def vector_items(vectors: Sequence[dict[str, Any]]) -> tuple[rows.ChunkColumns, np.ndarray]:
    """The chunks and the matrix of ``put_vectors`` items (S3 Vectors' ``PutVectors`` shape)."""
    if isinstance(vectors, np.ndarray):
        raise ValueError(
            'put_vectors takes a list of {"key": ..., "data": {"float32": [...]}} '
            "items, not a matrix: pair each row with its key"
        )
    fields: dict[str, list[Any]] = {name: [] for name in _ITEM_TYPES}
    matrix = []
    for index, item in enumerate(vectors):
        try:
            data = item["data"]["float32"] if isinstance(item["data"], dict) else item["data"]
            fields["chunk_id"].append(item["key"])
            fields["text"].append(item.get("text") or "")
            fields["title"].append(item.get("title"))
            fields["source"].append(item.get("source"))
            fields["position"].append(item.get("position"))
            fields["metadata"].append(item.get("metadata") or {})
        except (KeyError, TypeError, IndexError, AttributeError) as error:
            raise ValueError(
                f"vectors[{index}] must look like "
                '{"key": "id", "data": {"float32": [...]}, "metadata": {...}}'
            ) from error
        matrix.append(data)
    lengths = {len(row) for row in matrix}
    if len(lengths) > 1:
        raise ValueError(f"all vectors must have the same length, got lengths {sorted(lengths)}")
    array = np.asarray(matrix, dtype=np.float32).reshape(len(matrix), -1)
    if not np.isfinite(array).all():
        raise ValueError("vectors must not contain NaN or infinity")
    return _item_columns(fields), array


# The types ``Chunk`` takes each field of an item as, unconverted; other values are left to
# its validation (which converts some, refuses the rest).
_ITEM_TYPES: dict[str, frozenset[type]] = {
    "chunk_id": frozenset({str}),
    "text": frozenset({str}),
    "title": frozenset({str, type(None)}),
    "source": frozenset({str, type(None)}),
    "position": frozenset({int, type(None)}),
    "metadata": frozenset({dict}),
}


def _item_columns(fields: dict[str, list[Any]]) -> rows.ChunkColumns:
    """The items' fields as columns, checked a column at a time: one type test per column
    instead of a ``Chunk`` per item, unless some value needs ``Chunk``'s validation."""
    if all(set(map(type, fields[name])) <= types for name, types in _ITEM_TYPES.items()):
        ids = fields["chunk_id"]
        metadata = [rows.metadata_json(m, i, ids[i]) for i, m in enumerate(fields["metadata"])]
        columns = {name: values for name, values in fields.items() if name != "metadata"}
        return rows.ChunkColumns(**columns, metadata_json=metadata)
    return rows.ChunkColumns.of([_chunk(fields, i) for i in range(len(fields["chunk_id"]))])


def _chunk(fields: dict[str, list[Any]], index: int) -> Chunk:
    try:
        return Chunk(**{name: values[index] for name, values in fields.items()})
    except ValidationError as error:
        problem = error.errors()[0]
        name = "key" if problem["loc"][0] == "chunk_id" else problem["loc"][0]
        raise ValueError(f"vectors[{index}]: {name}: {problem['msg']}") from None


def query_vector(vector: Sequence[float] | np.ndarray, dimension: int | None) -> np.ndarray:
    """A caller's query vector as float32, checked against the index's ``dimension``."""
    query = np.asarray(vector, dtype=np.float32).ravel()
    if dimension is not None and len(query) != dimension:
        raise ValueError(f"the query vector has {len(query)} dimensions, the index {dimension}")
    if not np.isfinite(query).all():
        raise ValueError("the query vector must not contain NaN or infinity")
    return query


def page_token(chunk_id: str) -> str:
    """The opaque ``next_token`` of a page that ends at ``chunk_id``."""
    return base64.urlsafe_b64encode(json.dumps({"after": chunk_id}).encode()).decode()


def after_token(token: str) -> str:
    """The chunk id a ``next_token`` continues after."""
    try:
        after = json.loads(base64.urlsafe_b64decode(token.encode()))["after"]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            "next_token is not valid; pass the token a previous page returned"
        ) from error
    if not isinstance(after, str):
        raise ValueError("next_token is not valid; pass the token a previous page returned")
    return after
