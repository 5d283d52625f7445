"""The public data models: what goes into an index and what comes out of a search."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from types import UnionType
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field


class Chunk(BaseModel):
    """One indexed piece of text and everything stored with it."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str = Field(description="Stable key; writing the same id again replaces the chunk.")
    text: str = Field("", description="The chunk text, embedded and full-text indexed.")
    source: str | None = Field(None, description="Document identifier, e.g. a relative path.")
    position: int | None = Field(None, description="Ordinal of the chunk within its source.")
    title: str | None = Field(None, description="Heading breadcrumb, embedded as context.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Arbitrary attributes.")
    etag: str | None = Field(None, description="Content fingerprint of title and text.")
    stamped_at: datetime | None = Field(None, description="When the chunk was last written.")
    embedding: list[float] | None = Field(
        None, description="The stored vector; only filled when asked for (return_data=True)."
    )


# ``Chunk`` is the one declaration of the chunk row: the store makes these fields itself; the
# others are what a writer gives in every input form (a ``Chunk``, an S3-shaped item, a Parquet
# row), each form made from this list (tests/test_chunk_layout.py holds them to it).
MADE_BY_THE_STORE: frozenset[str] = frozenset({"etag", "stamped_at", "embedding"})
GIVEN_FIELDS: tuple[str, ...] = tuple(
    name for name in Chunk.model_fields if name not in MADE_BY_THE_STORE
)


def value_types(field: str) -> frozenset[type]:
    """The types a ``Chunk`` field holds its value as: ``str | None`` gives str and NoneType,
    ``dict[str, Any]`` dict."""
    annotation = Chunk.model_fields[field].annotation
    members = get_args(annotation) if isinstance(annotation, UnionType) else (annotation,)
    return frozenset(get_origin(member) or member for member in members)


class SearchResult(BaseModel):
    """A ranked hit: the chunk, its fused score, and where each signal ranked it."""

    model_config = ConfigDict(frozen=True)

    chunk: Chunk
    score: float = Field(description="Fused score (cosine similarity for vector-only search).")
    vector_rank: int | None = Field(None, description="1-based rank by cosine similarity.")
    text_rank: int | None = Field(None, description="1-based rank by BM25; None if not matched.")


class SearchResults(list[SearchResult]):
    """The hits of a search, best first, and the ``match`` that selected them: "any", "all",
    or ``search.MATCH_FELL_BACK`` when ``match="all"`` found no chunk with every term."""

    def __init__(self, hits: Iterable[SearchResult] = (), match: str = "any") -> None:
        super().__init__(hits)
        self.match = match


class VectorPage(BaseModel):
    """One page of ``list_vectors``; pass ``next_token`` back to get the next page."""

    vectors: list[Chunk]
    next_token: str | None = None

    def __iter__(self) -> Iterator[Chunk]:  # type: ignore[override]
        return iter(self.vectors)

    def __len__(self) -> int:
        return len(self.vectors)


class PublishedSource(BaseModel):
    """Where an index opened from a URL comes from, and how fresh its local copy is."""

    url: str
    cache_path: str
    downloaded_at: str | None = None
    checked_at: str | None = Field(None, description="When the server last confirmed the copy.")
    age_seconds: float | None = Field(None, description="Seconds since checked_at.")


class Example(BaseModel):
    """What an index's skill shows (``skill --json``; a baked image's label): a document to
    fetch, its first chunk, and a query that finds that document first by keywords (None when
    no title of the index makes one)."""

    source: str
    chunk_id: str
    query: str | None = None


class IndexReport(BaseModel):
    """What ``VectorStore.report()`` (and ``duckdb-vectors report``) tells about an index."""

    db_path: str
    file_size_bytes: int | None = Field(None, description="None for an in-memory store.")
    backend: str
    dimension: int | None
    chunk_count: int
    sources: dict[str, int] = Field(description="Each source and its number of chunks.")
    manifest: dict[str, Any] | None = Field(None, description="The manifest, as recorded.")
    published: PublishedSource | None = Field(
        None, description="The URL and cached copy, for an index opened from a URL."
    )
