"""Bringing an index built with an older tokenizer (or for another language) up to this one:
its postings only match query terms made the same way. Each chunk's title and text are stored,
so the index is re-tokenized, in one transaction, the first time it is opened for writing;
read-only it is refused with the command that does this. Its vectors do not depend on it. A
library with a language of its own (``index.languages``) keeps it; one whose language changes
is re-tokenized alone (``retokenize_library``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from ..errors import IndexMismatchError
from . import chunk_table, plain_sql
from .db import Transaction, objects_typed_by_first_value
from .manifest import Manifest, write_manifest
from .schema import UPGRADE_COMMAND
from .slices import LIBRARY_KEY, library_sql
from .terms import TOKENIZER_NAME

# Tokenizers of earlier releases. A name not here and not TOKENIZER_NAME comes from a newer
# release (or another program): re-tokenizing with this one would downgrade it.
OLDER_TOKENIZERS = ("exact-v1", "exact-v2")
_BATCH = 16_384


def current_manifest(
    connection: duckdb.DuckDBPyConnection,
    manifest: Manifest | None,
    db_path: Path | str,
    read_only: bool,
    language: str,
) -> Manifest | None:
    """The index's manifest once its terms are this tokenizer's in ``language``, re-tokenizing
    if need be.

    Raises ``IndexMismatchError`` for a tokenizer this release does not know, and for an older
    one or another language when the index is open read-only.
    """
    if manifest is None or (manifest.tokenizer == TOKENIZER_NAME and manifest.language == language):
        return manifest
    if manifest.tokenizer == TOKENIZER_NAME and read_only:
        raise IndexMismatchError(
            f"{db_path} was built for language {manifest.language}, not {language}; leave the"
            f" language unset, or re-tokenize it once with:"
            f" {UPGRADE_COMMAND} {db_path} --language {language}"
        )
    if manifest.tokenizer not in (TOKENIZER_NAME, *OLDER_TOKENIZERS):
        raise IndexMismatchError(
            f"{db_path} was built with tokenizer {manifest.tokenizer}, which this duckdb-vectors"
            f" (tokenizer {TOKENIZER_NAME}) does not know; upgrade duckdb-vectors or re-index it"
        )
    if read_only:
        raise IndexMismatchError(
            f"{db_path} was built with tokenizer {manifest.tokenizer}, this duckdb-vectors uses"
            f" {TOKENIZER_NAME}; re-tokenize it once with: {UPGRADE_COMMAND} {db_path}"
        )
    upgraded = manifest.model_copy(
        update={"tokenizer": TOKENIZER_NAME, "language": language, "built_at": datetime.now(UTC)}
    )
    languages = upgraded.languages()
    with objects_typed_by_first_value(connection), Transaction(connection):
        chunk_table.retokenize(connection, _BATCH, languages.sql(library_sql(upgraded.slice_keys)))
        plain_sql.create(connection, upgraded.slice_keys, languages)  # it names the language
        write_manifest(connection, upgraded)
    return upgraded


@dataclass(frozen=True)
class Retokenized:
    """A library re-tokenized in another language: ``languages`` as ``"english -> german"``,
    and how many of its chunks."""

    languages: str
    chunks: int


def retokenize_library(
    connection: duckdb.DuckDBPyConnection, slice_keys: list[str], library: str, language: str
) -> int:
    """Re-tokenize the chunks of ``library`` (as ``slices.library_sql`` names it, in an index
    with ``slice_keys``) with their words in ``language``; return how many. Only their
    postings change. The caller owns the transaction and records the library's language."""
    if LIBRARY_KEY not in slice_keys:  # no chunk has a library
        return 0
    return chunk_table.retokenize_where(
        connection, _BATCH, language, f"{library_sql(slice_keys)} = $3", [library]
    )
