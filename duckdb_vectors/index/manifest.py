"""The manifest: what built an index, and a fingerprint of what it holds, inside the index file.
It is written in the same transaction as every change to the chunks, so it always describes
the file's content, and it can be read without loading any model.
"""

from __future__ import annotations

from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version

import duckdb
from pydantic import BaseModel, Field, ValidationError, field_validator

from ..config import Quantization
from ..errors import NotAnIndexError
from .db import scalar
from .languages import Languages
from .schema import SCHEMA_VERSION
from .slices import SliceCount, library_key
from .terms import DEFAULT_LANGUAGE, TOKENIZER_NAME, checked_language, own_language


class SourceRecord(BaseModel):
    """What the manifest records of a source after a run (never credentials)."""

    kind: str = Field(description="folder, git, llms.txt or site.")
    location: str = Field(description="The SOURCE as given, without credentials.")
    prefix: str = Field("", description="The source prefix its documents are stored under.")
    commit: str | None = Field(None, description="git: the commit that was read.")
    fetched_at: datetime | None = Field(None, description="When it was read.")
    documents: int = Field(0, description="Documents it holds (read, unchanged or kept).")
    read: int = Field(0, description="Documents whose bytes were read this run.")
    unchanged: int = Field(0, description="Documents the source confirmed unchanged.")
    skipped: int = Field(0, description="Documents left out, with reasons in the summary.")
    failed: int = Field(0, description="Documents that could not be read this run.")
    listing: str | None = Field(
        None,
        description="A hash of the ids of the documents it listed to read: the next run lets"
        " the source confirm documents unchanged when it lists the same.",
    )


class LibraryRecord(BaseModel):
    """A library of a bundle (``bundle.Library``): its chunks carry its name and version, and
    its source's record is the one under ``prefix``."""

    name: str
    version: str | None = None
    description: str | None = None
    prefix: str
    language: str | None = Field(
        None, description="The Snowball language of its words; None: the index's (language)."
    )

    _known_language = field_validator("language")(own_language)

    @property
    def key(self) -> str:
        """The library as its chunks name it (``slices.library_key``): ``ray@2.9``."""
        return library_key(self.name, self.version)


class Manifest(BaseModel):
    """What an index was built with, and a fingerprint of what it holds."""

    backend: str = Field(description="Embedder spec the vectors were made with.")
    model_fingerprint: str | None = Field(None, description="Content hash of the model files.")
    dimension: int = Field(description="Width of every stored vector.")
    tokenizer: str = Field(description="Name of the tokenizer behind the lexical index.")
    language: str = Field(
        DEFAULT_LANGUAGE, description="Snowball language of the word forms of Latin-script words."
    )
    schema_version: int
    chunk_count: int = 0
    content_hash: str = Field(
        "", description="Hash of every chunk's id, etag, source, position and metadata."
    )
    slice_keys: list[str] = Field(
        default_factory=list, description="Metadata keys stamped by index runs (--set)."
    )
    slices: list[SliceCount] = Field(
        default_factory=list, description="Each slice (its values of slice_keys) and its chunks."
    )
    quantization: Quantization | None = Field(
        None, description="int8: the index also holds int8 codes of its vectors and searches them."
    )
    lexical_weight: float | None = Field(
        None,
        description="BM25's share of the fused score: tuned on judged questions (eval --tune),"
        " else the default of the model's kind.",
    )
    sources: list[SourceRecord] = Field(
        default_factory=list, description="Where the documents came from, one per source prefix."
    )
    libraries: list[LibraryRecord] = Field(
        default_factory=list, description="An index built from a bundle: its libraries."
    )
    duckdb_version: str = Field(default_factory=lambda: duckdb.__version__)
    package_version: str = Field(default_factory=lambda: package_version())
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    built_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    # A language without a stemmer would fail every search later, inside the tokenizer.
    _known_language = field_validator("language")(checked_language)

    def languages(self) -> Languages:
        """The language each library's words are read in (``index.languages``)."""
        return Languages.of(self.language, ((one.key, one.language) for one in self.libraries))


def package_version() -> str:
    try:
        return version("duckdb-vectors")
    except PackageNotFoundError:
        return "unknown"


def refreshed(
    previous: Manifest | None,
    *,
    backend: str,
    model_fingerprint: str | None,
    dimension: int,
    chunk_count: int,
    content_hash: str,
    slice_keys: list[str],
    slices: list[SliceCount],
    quantization: Quantization | None,
    language: str,
    lexical_weight: float | None,
) -> Manifest:
    """The manifest after a write: what the index holds now, built with what is in use now.
    The first build time and the records of sources and libraries are kept; a fingerprint
    not known this time (no model was loaded) stays as recorded."""
    kept = (
        {
            "created_at": previous.created_at,
            "sources": previous.sources,
            "libraries": previous.libraries,
        }
        if previous is not None
        else {}
    )
    return Manifest(
        backend=backend,
        model_fingerprint=model_fingerprint or (previous.model_fingerprint if previous else None),
        dimension=dimension,
        tokenizer=TOKENIZER_NAME,
        language=language,
        lexical_weight=lexical_weight,
        schema_version=SCHEMA_VERSION,
        chunk_count=chunk_count,
        content_hash=content_hash,
        slice_keys=slice_keys,
        slices=slices,
        quantization=quantization,
        **kept,
    )


def read_manifest(connection: duckdb.DuckDBPyConnection) -> Manifest | None:
    document = scalar(connection, "SELECT document FROM manifest WHERE id = 1")
    if not document:
        return None
    try:
        return Manifest.model_validate_json(document)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"]) or "the document"
        raise NotAnIndexError(f"its manifest is damaged ({where}: {problem['msg']})") from None


def write_manifest(connection: duckdb.DuckDBPyConnection, manifest: Manifest) -> None:
    connection.execute(
        "INSERT OR REPLACE INTO manifest (id, document) VALUES (1, ?)",
        [manifest.model_dump_json()],
    )
