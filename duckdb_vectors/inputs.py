"""What SDK callers pass, checked at the boundary: each problem is one ``ValueError`` (or
``TypeError``) naming the argument and what is allowed; ``argument_error`` words pydantic's
problems the same way, for the SDK and the MCP tools alike.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
from pydantic import TypeAdapter, ValidationError

from . import rows
from .config import DEFAULT_MAX_QUERY_CHARS, DEFAULT_MAX_QUERY_TERMS
from .index.terms import ParsedQuery, parse_query
from .models import GIVEN_FIELDS, Chunk, value_types
from .search.answer import MATCH_MODES

# The most results one call returns (a guard against a runaway top_k, not a tuning knob).
MAX_RESULTS = 10_000


def parsed_query(
    text: str,
    languages: Sequence[str],
    max_chars: int = DEFAULT_MAX_QUERY_CHARS,
    max_terms: int = DEFAULT_MAX_QUERY_TERMS,
) -> ParsedQuery:
    """The query's text, checked, and parsed for the layers below (``terms.parse_query``).

    The one place a query's size is bounded, for every caller (the SDK, the CLI, MCP over stdio
    and HTTP): its length is checked before any work, its distinct terms once tokenized (at most
    ``max_chars`` characters, so in milliseconds) in every language of the index
    (``languages``)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the query text must be a non-empty string")
    if len(text) > max_chars:
        raise ValueError(
            f"the query has {len(text):,} characters, more than the {max_chars:,} allowed"
            " (DUCKDB_VECTORS_MAX_QUERY_CHARS): ask a shorter question"
        )
    parsed = parse_query(rows.check_utf8(text, "the query"))
    # A word has a form in each language: only a query of more words than that can have more.
    most = len(parsed.all_words) * len(languages)
    terms = len(parsed.all_terms(languages)) if most > max_terms else most
    if terms > max_terms:
        raise ValueError(
            f"the query has {terms:,} distinct terms, more than the"
            f" {max_terms:,} allowed (DUCKDB_VECTORS_MAX_QUERY_TERMS): ask a shorter question"
        )
    return parsed


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
    """The chunks and the matrix of ``put_vectors`` items (S3 Vectors' ``PutVectors`` shape):
    an item's ``key`` is the chunk's id, and it may carry any other field a writer gives."""
    if isinstance(vectors, np.ndarray):
        raise ValueError(
            'put_vectors takes a list of {"key": ..., "data": {"float32": [...]}} '
            "items, not a matrix: pair each row with its key"
        )
    keys: list[Any] = []
    fields: dict[str, list[Any]] = {name: [] for name in GIVEN_FIELDS if name != "chunk_id"}
    matrix = []
    for index, item in enumerate(vectors):
        try:
            data = item["data"]["float32"] if isinstance(item["data"], dict) else item["data"]
            keys.append(item["key"])
            for name, values in fields.items():
                values.append(item.get(name))
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
    fields["text"] = [text or "" for text in fields["text"]]
    fields["metadata"] = [metadata or {} for metadata in fields["metadata"]]
    fields = {"chunk_id": keys, **fields}
    return _item_columns(fields), array


# The types ``Chunk`` holds each field as: other values are left to its validation.
_ITEM_TYPES = {name: value_types(name) for name in GIVEN_FIELDS}


def _item_columns(fields: dict[str, list[Any]]) -> rows.ChunkColumns:
    """The items' fields as columns: a type test per column, not a ``Chunk`` per item, unless
    some value needs ``Chunk``'s validation."""
    if all(set(map(type, fields[name])) <= types for name, types in _ITEM_TYPES.items()):
        ids = fields["chunk_id"]
        metadata = [rows.metadata_json(m, i, ids[i]) for i, m in enumerate(fields["metadata"])]
        return rows.ChunkColumns({**fields, "metadata": metadata})
    return rows.ChunkColumns.of([_chunk(fields, i) for i in range(len(fields["chunk_id"]))])


def _chunk(fields: dict[str, list[Any]], index: int) -> Chunk:
    try:
        return Chunk(**{name: values[index] for name, values in fields.items()})
    except ValidationError as error:
        field = str(error.errors()[0]["loc"][0])
        name = "key" if field == "chunk_id" else field
        raise ValueError(f"vectors[{index}]: {argument_error(error, name)}") from None


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
    except (ValueError, KeyError, TypeError):
        after = None
    if not isinstance(after, str):
        raise ValueError("next_token is not valid; pass the token a previous page returned")
    return after


_Value = TypeVar("_Value")

# How a problem pydantic reports (by its ``type``) reads after the argument's name: ``{got}``
# is the value given, the other fields come from the problem's ``ctx``.
_PROBLEMS = {
    "missing": "is required",
    "string_type": "must be a string, got {got}",
    "int_type": "must be an integer, got {got}",
    "int_parsing": "must be an integer, got {got}",
    "int_from_float": "must be an integer, got {got}",
    "bool_type": "must be true or false, got {got}",
    "dict_type": "must be a JSON object, got {got}",
    "literal_error": "must be {expected}, got {got}",
    "greater_than_equal": "must be {ge} or more, got {got}",
    "less_than_equal": "must be {le} or less, got {got}",
}


def argument_error(error: ValidationError, name: str | None = None) -> str:
    """Pydantic's report as one plain sentence: each argument it refused, what the argument
    must be and what was given. ``name`` names the one value validated, when pydantic's name
    for it is not the caller's (a value validated alone has none)."""
    sentences: dict[str, str] = {}
    for problem in error.errors(include_url=False):
        argument = name or str(problem["loc"][0])
        if argument in sentences:
            continue  # the first problem of each: a union reports one per member type
        template = _PROBLEMS.get(problem["type"])
        if template is None:
            sentences[argument] = f"{argument}: {problem['msg']}"
        else:
            got = f"{problem['input']!r:.80}"
            sentences[argument] = f"{argument} " + template.format(
                got=got, **problem.get("ctx", {})
            )
    return "; ".join(sentences.values())


def checked(kind: TypeAdapter[_Value], name: str, value: object) -> _Value:
    """``value`` as ``kind`` takes it, or a ValueError naming ``name`` (see ``argument_error``)."""
    try:
        return kind.validate_python(value)
    except ValidationError as error:
        raise ValueError(argument_error(error, name)) from None
