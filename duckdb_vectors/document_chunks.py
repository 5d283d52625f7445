"""What an index run writes for each document, apart from any store: the document chunked by
its type, its links to the run's other pages made followable, its citation URL recorded and
the run's slice stamped on.

``index_source`` makes each document's chunks with a ``DocumentChunking``. ``FolderChunks``
makes them for a folder without an index, so that a job which embeds elsewhere (a Ray or Spark
job, ``examples/ray_embed_to_parquet.py``) writes the chunk ids, texts, titles and metadata
that ``index FOLDER`` writes, for ``index --from-parquet`` to import. Both are plain data that
pickles, to be shipped to a cluster's workers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from . import links
from .chunkers import BinaryChunker, Chunker, decode_text, default_chunker
from .citations import UrlRule
from .errors import SkipFile
from .index import slices
from .models import Chunk
from .sources import Entry, SourceOptions
from .sources.folder import FolderSource


@dataclass(frozen=True)
class DocumentChunking:
    """How one run turns a document's bytes into the chunks it writes.

    Args:
        chunker: picks each document's chunker (``default_chunker()`` unless the run's own).
        pages: every page the run lists, for the links between them (``links.Pages``).
        urls: how a document's citation URL is found.
        source_prefix: prepended to each document id (``index --source-prefix``).
        metadata: the run's slice, stamped onto every chunk.
    """

    chunker: Chunker | BinaryChunker
    pages: links.Pages
    urls: UrlRule
    source_prefix: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)

    def chunks(self, page: str, data: bytes, url: str | None = None) -> list[Chunk]:
        """The chunks of the document ``page`` (its id in the source) with these bytes;
        ``url``: its own citation where its source knows one (a site's page). Raises
        ``SkipFile`` with the reason for a document it cannot index."""
        if isinstance(self.chunker, BinaryChunker):
            chunks = self.chunker.chunk_bytes(data, self.source_prefix + page)
        else:
            chunks = self.chunker.chunk(decode_text(data), self.source_prefix + page)
        if not chunks:
            raise SkipFile("no text to index")
        chunks = links.rewrite(chunks, page, self.pages, self.urls, self.source_prefix)
        return slices.stamp(self.urls.cite(chunks, page, url), self.metadata)


@dataclass(frozen=True)
class FolderChunks:
    """The files of a folder that ``index FOLDER`` reads (its ignore files, asset and
    build-output rules, ``options``), and the chunks it writes for each of them.

    ``files`` are paths relative to ``root``; ``refused`` names the entries the listing left
    out, with the reason (a symlink out of the folder, a socket), as ``index`` reports them.
    """

    source: FolderSource
    files: tuple[str, ...]
    refused: tuple[tuple[str, str], ...]
    chunking: DocumentChunking

    @classmethod
    def of(cls, folder: str | Path, options: SourceOptions | None = None) -> FolderChunks:
        """List ``folder`` now; raises ``InvalidSourceError`` if it is not a folder."""
        source = FolderSource(str(Path(folder).resolve()), options or SourceOptions())
        entries = source.list({})
        files = tuple(entry.source for entry in entries if entry.problem is None)
        refused = tuple(
            (entry.source, entry.problem.reason) for entry in entries if entry.problem is not None
        )
        chunking = DocumentChunking(default_chunker(), links.Pages(files), UrlRule())
        return cls(source, files, refused, chunking)

    def chunks(self, file: str) -> list[Chunk]:
        """The chunks of one of ``files``, read now as ``index`` reads it (its size limit, a
        file changing while read). Raises ``SkipFile`` with the reason ``index`` would give
        for leaving it out."""
        fetched = next(iter(self.source.read([Entry(file)], {})))
        if fetched.problem is not None:
            raise SkipFile(fetched.problem.reason)
        return self.chunking.chunks(file, fetched.data or b"", fetched.url)
