"""Slices: several versions (or languages, products ...) of a document set in one index.

An index run given ``metadata`` (``index --set version=2.0``) stamps it onto every chunk it
writes; a search filter on it (``{"version": "2.0"}``) selects one slice. **Each slice owns its
own source prefix**: chunk ids and ``documents`` are keyed by source, and a run prunes every
chunk under its prefix that it did not write. A sliced run's prefix therefore defaults to its
values (``guide.md`` as ``2.0/guide.md``), and a run whose prefix holds chunks of another slice
(or of any slice, for a run without ``--set``) is refused before it writes anything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
from pydantic import BaseModel, Field

from ..citations import URL_KEY
from ..errors import SliceError
from ..filters import json_path_literal
from ..models import Chunk
from . import chunk_table

RESERVED_KEYS = frozenset({URL_KEY})  # written by the index run itself
LIBRARY_KEY = "library"  # the slice keys a bundle's chunks carry (``bundle.py``)
VERSION_KEY = "version"
NO_LIBRARY = "''"  # ``library_sql`` of every chunk of an index without libraries


class SliceCount(BaseModel):
    """One slice of an index: its stamped values and how many chunks it has."""

    metadata: dict[str, str] = Field(description="The slice keys and this slice's values.")
    chunk_count: int


def parse_assignments(texts: Sequence[str]) -> dict[str, str]:
    """Repeated ``KEY=VALUE`` assignments (as ``--set`` takes them, split at the first ``=``)
    as one mapping; a key may be given once."""
    metadata: dict[str, str] = {}
    for text in texts:
        key, equals, value = (part.strip() for part in text.partition("="))
        if not equals or not key or not value:
            raise SliceError(f"{text!r} is not KEY=VALUE with a key and a value, e.g. version=2.0")
        if key in metadata:
            raise SliceError(f"{key!r} is given twice; give each key one value")
        metadata[key] = value
    return checked(metadata)


def checked(metadata: Mapping[str, str]) -> dict[str, str]:
    """The slice metadata, each key and value a non-empty string and no key reserved."""
    for key, value in metadata.items():
        if not isinstance(key, str) or not isinstance(value, str) or not key or not value:
            raise SliceError(
                f"slice metadata {key!r}: {value!r} must map a non-empty key to a non-empty"
                " string, e.g. {'version': '2.0'}"
            )
        if key in RESERVED_KEYS:
            raise SliceError(f"slice key {key!r} is reserved for citations; choose another key")
    return dict(metadata)


def default_prefix(metadata: Mapping[str, str]) -> str:
    """The source prefix of a slice given none: its values as folders (``2.0/``, ``2.0/en/``)."""
    return "".join(f"{value}/" for value in metadata.values())


def describe(metadata: Mapping[str, str]) -> str:
    return " ".join(f"{key}={value}" for key, value in metadata.items()) or "(no slice)"


def stamp(chunks: list[Chunk], metadata: Mapping[str, str]) -> list[Chunk]:
    """``chunks`` with the slice's values in their metadata (over any of the same name)."""
    if not metadata:
        return chunks
    return [
        chunk.model_copy(update={"metadata": {**chunk.metadata, **metadata}}) for chunk in chunks
    ]


def check_scope(
    connection: duckdb.DuckDBPyConnection,
    prefix: str,
    metadata: Mapping[str, str],
    slice_keys: list[str],
) -> None:
    """Refuse a run whose prefix holds chunks of another slice: it would prune them."""
    keys = list(metadata) if metadata else slice_keys
    if not keys:
        return
    values = [_value_sql(key) for key in keys]
    if metadata:  # another value for one of this slice's keys
        others = " OR ".join(
            f"({value} IS NOT NULL AND {value} != ${i + 2})" for i, value in enumerate(values)
        )
        parameters = [prefix, *metadata.values()]
    else:  # any slice at all
        others = " OR ".join(f"{value} IS NOT NULL" for value in values)
        parameters = [prefix]
    found = chunk_table.first_where(
        connection, values, f"starts_with(source, $1) AND ({others})", parameters
    )
    if found is None:
        return
    source, *held = found
    held_values = zip(keys, held, strict=True)
    other = describe({key: value for key, value in held_values if value is not None})
    run = f"slice {describe(metadata)}" if metadata else "a run without --set"
    raise SliceError(
        f"{run}: source prefix {prefix!r} holds chunks of slice {other} (e.g. {source}), which"
        " this run would prune; give each slice its own --source-prefix (by default a slice's"
        " values, e.g. 2.0/), or delete that slice first"
    )


def count(connection: duckdb.DuckDBPyConnection, slice_keys: list[str]) -> list[SliceCount]:
    """Each slice of the index and its chunk count: one GROUP BY over the slice keys."""
    if not slice_keys:
        return []
    values = [_value_sql(key) for key in slice_keys]
    rows = chunk_table.count_by(
        connection, values, " OR ".join(f"{value} IS NOT NULL" for value in values)
    )
    return [
        SliceCount(
            metadata={
                key: value
                for key, value in zip(slice_keys, row[:-1], strict=True)
                if value is not None
            },
            chunk_count=row[-1],
        )
        for row in rows
    ]


def library_sql(slice_keys: Sequence[str], metadata: str = "metadata") -> str:
    """The library of a chunk (its metadata column ``metadata``) as a SQL string: its name and
    version in a bundle (``ray@2.9``), ``''`` for a chunk of no library; ``''`` for every chunk,
    without reading their metadata, when the index holds no library (``slice_keys``). BM25's
    statistics are counted by library (``bm25.py``)."""
    if LIBRARY_KEY not in slice_keys:
        return NO_LIBRARY
    name, version = _value_sql(LIBRARY_KEY, metadata), _value_sql(VERSION_KEY, metadata)
    return f"coalesce({name} || coalesce('@' || {version}, ''), '')"


def library_key(name: str, version: str | None) -> str:
    """A library as ``library_sql`` names it: ``ray@2.9``, or ``ray`` without a version."""
    return name if version is None else f"{name}@{version}"


def library_of(metadata: Mapping[str, Any]) -> str:
    """``library_sql`` in Python: the library of a chunk with this metadata (in an index with
    libraries), ``''`` for a chunk of none. A value that is not a string reads as its JSON text,
    as DuckDB's ``json_extract_string`` reads it."""
    name, version = (_json_string(metadata.get(key)) for key in (LIBRARY_KEY, VERSION_KEY))
    return "" if name is None else library_key(name, version)


def _json_string(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def _value_sql(key: str, metadata: str = "metadata") -> str:
    return f"json_extract_string({metadata}, {json_path_literal(key)})"
