"""``fetch``: what an agent reads after a search — a whole document (its id is a source), or a
chunk with ``context`` chunks of its document on each side (its id is a chunk id) — as one
text, a page at a time within a token budget.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, TypeAdapter

from .budget import fit
from .citations import document_uri, url_of
from .errors import UnknownIdError
from .inputs import checked
from .models import Chunk
from .store import VectorStore

MAX_CONTEXT = 20  # chunks on each side of a fetched chunk
Kind = Literal["document", "chunk"]

# The arguments with bounds, as ``fetch`` checks them and the MCP ``fetch`` tool declares them.
Neighbours = Annotated[
    int,
    Field(
        strict=True,
        ge=0,
        le=MAX_CONTEXT,
        description="For a chunk_id: how many chunks of its document to add on each side.",
    ),
]
Offset = Annotated[
    int,
    Field(
        strict=True,
        ge=0,
        description="Where to start, in characters: a previous answer's next_offset.",
    ),
]
_CONTEXT: TypeAdapter[int] = TypeAdapter(Neighbours)
_OFFSET: TypeAdapter[int] = TypeAdapter(Offset)


class Fetched(BaseModel):
    """One page of a fetched document or chunk (the JSON of ``fetch --json`` and of the MCP
    ``fetch`` tool)."""

    id: str = Field(description="The id asked for.")
    kind: Kind
    source: str | None
    uri: str | None = Field(description="The document as a resource (MCP).")
    url: str | None = Field(description="The public page to cite, when the index knows it.")
    chunk_ids: list[str] = Field(description="The chunks the whole text is made of, in order.")
    text: str = Field(description="This page of the text.")
    offset: int = Field(description="Where this page starts, in characters of the whole text.")
    next_offset: int | None = Field(description="Where the next page starts; None at the end.")
    total_chars: int = Field(description="The length of the whole text.")

    def as_text(self, cite: bool = False, next_page: bool = True) -> str:
        """The page, and (``next_page``) how to get the next one if there is more; with
        ``cite``, the URL to cite after it (every page says it: a client may show only the
        text)."""
        notes = []
        if next_page and self.next_offset is not None:
            left = self.total_chars - self.next_offset
            notes.append(
                f"[{left} more characters: fetch id={self.id!r} offset={self.next_offset}"
                " for the rest]"
            )
        if cite and self.url:
            notes.append(f"[Cite: {self.url}]")
        return "\n\n".join([self.text, *notes])


def fetch(
    store: VectorStore, id: str, *, context: int = 0, max_tokens: int | None = None, offset: int = 0
) -> Fetched:
    """The document or chunk ``id`` names, from ``offset``, within ``max_tokens``."""
    if not isinstance(id, str) or not id.strip():
        raise ValueError("id must be a non-empty string: a hit's chunk_id or source, from search")
    context = checked(_CONTEXT, "context", context)
    offset = checked(_OFFSET, "offset", offset)
    kind, chunks = _find(store, id, context)
    whole = render(chunks, with_header=kind == "document")
    if offset > len(whole):
        raise ValueError(f"offset {offset} is past the end of {id!r} ({len(whole)} characters)")
    page = whole[offset:] if max_tokens is None else fit(whole[offset:], max_tokens)
    end = offset + len(page)
    return Fetched(
        id=id,
        kind=kind,
        source=chunks[0].source,
        uri=document_uri(chunks[0].source),
        url=url_of(chunks[0]),
        chunk_ids=[chunk.chunk_id for chunk in chunks],
        text=page,
        offset=offset,
        next_offset=end if end < len(whole) else None,
        total_chars=len(whole),
    )


def render(chunks: list[Chunk], with_header: bool) -> str:
    """Chunks as one text: the source as a header (for a whole document), each breadcrumb and
    PDF page once, where it changes."""
    parts = [f"# {chunks[0].source}"] if with_header and chunks[0].source else []
    title, page = None, None
    for chunk in chunks:
        if chunk.title and chunk.title != title:
            parts.append(f"## {chunk.title}")
        chunk_page = chunk.metadata.get("page")
        if chunk_page is not None and chunk_page != page:
            parts.append(f"[page {chunk_page}]")
        title, page = chunk.title or title, chunk_page if chunk_page is not None else page
        parts.append(chunk.text)
    return "\n\n".join(parts)


def _find(
    store: VectorStore, id: str, context: int
) -> tuple[Literal["document", "chunk"], list[Chunk]]:
    found = store.get_vectors([id])
    if found:
        chunk = found[0]
        if context == 0 or chunk.source is None or chunk.position is None:
            return "chunk", [chunk]
        around = (chunk.position - context, chunk.position + context)
        return "chunk", store.document(chunk.source, around)
    document = store.document(id)
    if document:
        return "document", document
    raise UnknownIdError(
        f"no chunk or document {id!r} in the index; search first, then fetch a hit's"
        " chunk_id or source"
    )
