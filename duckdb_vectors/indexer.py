"""``index_source``: mirror a source of documents (a folder, a git repository, a site) into an
index, incrementally and safely; ``index_folder`` is its folder form.

A source lists its documents and reads them (``sources``); this run is the same for every
kind. Each document is dispatched by MIME type to a chunker. A document whose bytes and chunker
settings are unchanged since the last run is not chunked again (and one its source confirms
unchanged, by an ETag or a git blob, is not even read); a changed document's chunks are
upserted, and only chunks whose text changed are embedded (a moved paragraph reuses its
vector). Documents that disappeared, and the tail of documents that got shorter, are pruned.
The whole run is one transaction: a crash or Ctrl-C leaves the previous index intact and
searchable.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from . import chunkers, links
from .chunkers import SNIFF_BYTES, BinaryChunker, Chunker, CompositeChunker, default_chunker
from .citations import UrlRule
from .config import DEFAULT_MAX_FILE_BYTES
from .document_chunks import DocumentChunking
from .errors import SkipFile
from .index import documents, slices
from .index.manifest import SourceRecord
from .models import Chunk
from .progress import counted
from .rows import embedding_text
from .selection import FileSelection
from .sources import Entry, Fetched, Problem, Source, SourceOptions, Validators, open_source
from .sources.folder import FolderSource, walk
from .store import VectorStore, WriteStats

logger = logging.getLogger(__name__)


class FileProblem(BaseModel):
    """A document that was not indexed, and why."""

    source: str
    reason: str


class IndexSummary(BaseModel):
    """What an ``index_source`` (or ``index_folder``) run did. ``files_*`` count documents:
    a folder's or a repository's files, a site's pages."""

    folder: str = Field(description="The SOURCE as given (its name from when it was a folder).")
    kind: str = Field("folder", description="What kind of source it is (``sources.KINDS``).")
    files_read: int = Field(0, description="Documents whose bytes were read this run.")
    files_seen: int = 0
    files_new: int = 0
    files_changed: int = 0
    files_unchanged: int = 0
    skipped: list[FileProblem] = Field(default_factory=list)
    failed: list[FileProblem] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    chunks_added: int = 0
    chunks_updated: int = 0
    chunks_unchanged: int = 0
    chunks_embedded: int = Field(0, description="Chunks whose vectors this run computed.")
    chunks_reused: int = Field(
        0,
        description="Chunks the source holds after the run whose vectors it did not compute:"
        " those of unchanged documents, unchanged chunks of changed ones, and new or changed"
        " chunks whose text the index already had a vector for (chunks_embedded + chunks_reused"
        " = the chunks under the run's source prefix).",
    )
    chunks_pruned: int = 0
    chunks_past_window: int = 0
    chunks_retokenized: int = 0
    retokenized: str | None = Field(
        None, description='What BM25\'s words were re-tokenized for: "english -> german".'
    )
    seconds: float = 0.0

    def count(self, stats: WriteStats) -> None:
        self.chunks_added += stats.added
        self.chunks_updated += stats.updated
        self.chunks_unchanged += stats.unchanged
        self.chunks_embedded += stats.embedded
        # An index run computes every vector it does not take from the index.
        self.chunks_reused += stats.added + stats.updated + stats.unchanged - stats.embedded


class _WarningCollector(logging.Handler):
    """Collects what chunkers log about a file (e.g. PDF pages without text) for the summary."""

    def __init__(self, summary: IndexSummary) -> None:
        super().__init__(logging.WARNING)
        self.summary = summary

    def emit(self, record: logging.LogRecord) -> None:
        self.summary.warnings.append(record.getMessage())


def index_folder(
    store: VectorStore,
    folder: str | Path,
    *,
    recursive: bool = True,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    include_hidden: bool = False,
    chunker: Chunker | BinaryChunker | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    source_prefix: str | None = None,
    urls: UrlRule | None = None,
    metadata: Mapping[str, str] | None = None,
    progress: bool | None = None,
) -> IndexSummary:
    """Index every file of ``folder`` into ``store`` and prune what is no longer there.

    Args:
        store: a read-write store.
        folder: the folder to index; each chunk's ``source`` is the file's path relative to it.
        recursive: descend into sub-folders.
        include: glob patterns (on the relative path); if given, only matching files are read,
            and the default exclusions below do not apply.
        exclude: glob patterns of files to leave out.
            Without ``include``, the folder's ``.gitignore`` / ``.duckdb-vectors-ignore`` and
            the asset and build-output rules of ``selection.FileSelection`` also leave files
            out (``_build/``, ``_static/``, ``node_modules/``, ``.js``, ``.css``, ``.svg`` ...).
        include_hidden: also read files and folders whose name starts with ``.``.
        max_file_bytes: larger files are skipped, with the reason in the summary.
        chunker, source_prefix, urls, metadata, progress: as for ``index_source``.
    """
    options = SourceOptions(
        include=include,
        exclude=exclude,
        include_hidden=include_hidden,
        recursive=recursive,
        max_file_bytes=max_file_bytes,
    )
    return index_source(
        store,
        FolderSource(str(folder), options),
        chunker=chunker,
        source_prefix=source_prefix,
        urls=urls,
        metadata=metadata,
        progress=progress,
    )


def index_source(
    store: VectorStore,
    source: Source | str,
    *,
    options: SourceOptions | None = None,
    chunker: Chunker | BinaryChunker | None = None,
    source_prefix: str | None = None,
    urls: UrlRule | None = None,
    metadata: Mapping[str, str] | None = None,
    progress: bool | None = None,
) -> IndexSummary:
    """Index every document of ``source`` into ``store`` and prune what is no longer there.

    Args:
        store: a read-write store.
        source: a ``Source``, or a SOURCE as the CLI takes it (a folder, a ``git+https://``
            URL, an ``llms.txt`` URL, a site's URL), opened with ``options``.
        options: what to read of it (``SourceOptions``: include/exclude patterns, size and
            page limits, politeness, request headers).
        chunker: replaces the default composite chunker (Markdown, reST, HTML, notebooks, PDF
            and text, by MIME type).
        source_prefix: prepended to every document id; pruning only touches ids with it, so
            several sources (or a runtime registry) can share one index. Default: none, or
            for a slice (``metadata``) its values as folders, e.g. ``2.0/``.
        urls: how each document's public URL is found (``citations.UrlRule``); by default
            the source's own (a page's address), else only from front matter naming an
            absolute URL.
        metadata: a slice, e.g. ``{"version": "2.0"}``: stamped onto every chunk written, so
            a filter selects it. Each slice needs its own source prefix (see ``slices``); a
            run whose prefix holds another slice raises ``SliceError``.
        progress: show a progress bar on stderr; default: only when stderr is a terminal.

    Raises ``errors.InvalidSourceError`` (one line, naming the source) when the source cannot
    be read at all; the index is then left as it was.
    """
    started = time.monotonic()
    if isinstance(source, str):
        source = open_source(source, options)
    try:
        summary = _index(store, source, chunker, source_prefix, urls, metadata, progress)
    finally:
        source.close()
    summary.seconds = round(time.monotonic() - started, 3)
    return summary


def _index(
    store: VectorStore,
    source: Source,
    chunker: Chunker | BinaryChunker | None,
    source_prefix: str | None,
    urls: UrlRule | None,
    metadata: Mapping[str, str] | None,
    progress: bool | None,
) -> IndexSummary:
    metadata = slices.checked(metadata or {})
    if source_prefix is None:
        source_prefix = slices.default_prefix(metadata)
    slices.check_scope(store.connection, source_prefix, metadata, store.slice_keys)
    summary = IndexSummary(folder=source.location, kind=source.kind)
    before, now = store.retokenized_from, store.manifest
    if before is not None and now is not None:  # done as the store opened, in the same run
        summary.chunks_retokenized = before.chunk_count
        changed = ("language", "tokenizer")[before.language == now.language]
        summary.retokenized = f"{getattr(before, changed)} -> {getattr(now, changed)}"
    run = _Run(store, chunker or default_chunker(), summary, source_prefix, metadata)
    run.choose_citations(urls, source)
    entries = source.list(run.previous())
    run.listed(entries)
    collector = _WarningCollector(summary)
    chunker_logger = logging.getLogger("duckdb_vectors.chunkers")
    chunker_logger.addHandler(collector)
    try:
        with store.transaction():
            store.record_slice_keys(metadata)
            # A generator: documents are read and chunked while earlier batches are embedded.
            fetched = source.read(run.to_read, run.revalidate)
            chunks = (chunk for one in _progress(fetched, run, progress) for chunk in run.add(one))
            summary.count(store.add_chunks(chunks, stamp=run.stamp))
            run.finish()
            store.record_source(run.record(source))
    finally:
        chunker_logger.removeHandler(collector)
    return summary


def first_indexable_file(folder: str | Path) -> str | None:
    """The first file of ``folder`` (as ``index_folder`` walks it by default) whose type can be
    indexed, judged by its name and first bytes without chunking it; None if there is none."""
    root = Path(folder)
    composite = default_chunker()
    for entry in walk(root, True, False, FileSelection.for_folder(root)):
        if entry.problem is None:
            try:
                with (root / entry.source).open("rb") as file:
                    head = file.read(SNIFF_BYTES)
            except OSError:
                continue
            if composite.can_index(entry.source, head):
                return entry.source
    return None


class _Run:
    """One indexing run: what to read, per-document decisions, and the final prune.

    Document ids from the source are relative (``guide/install.md``); the index stores them
    under the run's source prefix."""

    def __init__(
        self,
        store: VectorStore,
        chunker: Chunker | BinaryChunker,
        summary: IndexSummary,
        source_prefix: str,
        metadata: dict[str, str],
    ) -> None:
        self.store = store
        self.chunker = chunker
        self.summary = summary
        self.source_prefix = source_prefix
        self.metadata = metadata
        self.stamp = datetime.now(UTC)
        # A custom embedder may not say how much of a text it embeds.
        self.windows = getattr(store.embedder, "windows", lambda texts: [1] * len(texts))
        self.known = documents.known(store.connection, source_prefix)
        self.keep: list[str] = []  # sources whose stored chunks stay as they are
        self.documents: list[documents.Document] = []
        self.to_read: list[Entry] = []
        self.revalidate: dict[str, Validators] = {}
        self.listing: str | None = None  # a hash of the ids listed to read

    def choose_citations(self, urls: UrlRule | None, source: Source) -> None:
        """The run's URL rule: the caller's if it names a base URL, else the source's own
        (whose pages' addresses then cite them), else front matter only."""
        self.explicit_urls = urls is not None and urls.base_url is not None
        own = None if self.explicit_urls else source.citations()
        self.urls = own or urls or UrlRule()
        self.chunker_key = _chunker_key(self.chunker, self.urls, self.metadata)

    def previous(self) -> dict[str, Validators]:
        """What the index holds under the prefix, by relative id, with its validators."""
        cut = len(self.source_prefix)
        return {source[cut:]: known.validators for source, known in self.known.items()}

    def listed(self, entries: Sequence[Entry]) -> None:
        """Take the source's listing: report what it refused, and decide which documents the
        source may confirm unchanged instead of sending."""
        self.to_read = [entry for entry in entries if entry.problem is None]
        for entry in entries:
            if entry.problem is not None:
                self._problem(entry.source, entry.problem)
        self.pages = links.Pages(entry.source for entry in self.to_read)
        self.chunking = DocumentChunking(
            self.chunker, self.pages, self.urls, self.source_prefix, self.metadata
        )
        self.listing = hashlib.sha256("\0".join(sorted(self.pages.paths)).encode()).hexdigest()[:32]
        previous = self.previous()
        # A document's chunks depend on which pages its links name (``links.fingerprint``):
        # with a page added or gone, every document is read so its links are checked again.
        # The stored documents alone cannot tell: a page skipped (an image, no text) lists
        # every run but is never stored, hence the last run's listing.
        if self.pages.paths != frozenset(previous) and self.listing != self._last_listing():
            return
        self.revalidate = {
            page: validators
            for page, validators in previous.items()
            if validators and self.known[self.source_prefix + page].chunker == self.chunker_key
        }

    def _last_listing(self) -> str | None:
        manifest = self.store.manifest
        recorded = manifest.sources if manifest is not None else []
        return next((r.listing for r in recorded if r.prefix == self.source_prefix), None)

    def add(self, fetched: Fetched) -> list[Chunk]:
        """The chunks to write for a document: none if it is unchanged or cannot be indexed."""
        source = self.source_prefix + fetched.source
        if fetched.problem is not None:
            self._problem(fetched.source, fetched.problem)
            return []
        self.summary.files_seen += 1
        if fetched.unchanged:
            self.summary.files_unchanged += 1
            self.keep.append(source)
            return []
        data = fetched.data or b""
        self.summary.files_read += 1
        page = fetched.source
        # The chunks depend on the bytes and on which pages their links name (``links``).
        content_hash = hashlib.sha256(data).hexdigest()[:48] + links.fingerprint(
            data, page, self.pages
        )
        known = self.known.get(source)
        if known is not None and (known.content_hash, known.chunker) == (
            content_hash,
            self.chunker_key,
        ):
            self.summary.files_unchanged += 1
            self.keep.append(source)
            if known.validators != fetched.validators:
                self._record(source, content_hash, data, known.chunk_count, fetched)
            return []
        url = None if self.explicit_urls else fetched.url
        try:
            chunks = self.chunking.chunks(page, data, url)
        except SkipFile as reason:
            self._problem(page, Problem(str(reason), skipped=True, keep=False))
            return []
        except Exception as error:  # a chunker bug or a hostile file must not stop the run
            self._problem(page, Problem(f"{type(error).__name__}: {error}"))
            return []
        self.summary.chunks_past_window += self._past_window(chunks)
        if known is not None:
            self.summary.files_changed += 1
        else:
            self.summary.files_new += 1
        self._record(source, content_hash, data, len(chunks), fetched)
        return chunks

    def _record(
        self, source: str, content_hash: str, data: bytes, chunk_count: int, fetched: Fetched
    ) -> None:
        mime_type = _mime_type(self.chunker, source, data)
        self.documents.append(
            documents.Document(
                source, content_hash, mime_type, len(data), chunk_count, fetched.validators
            )
        )

    def _past_window(self, chunks: list[Chunk]) -> int:
        """How many chunks are longer than the model embeds: BM25 reads all of their text,
        their vectors only its start. They are not split: on the Ray docs questions, cutting
        them to fit cost page hits with both models measured (bench/docsqa.py; MiniLM, one
        per page, hit@13 0.716 -> 0.678; static 0.682 -> 0.640)."""
        return sum(count > 1 for count in self.windows([embedding_text(c) for c in chunks]))

    def finish(self) -> None:
        # ``known`` documents have all their chunks (``documents.known``): these keep them.
        self.summary.chunks_reused += sum(
            self.known[source].chunk_count for source in set(self.keep)
        )
        self.store.restamp(self.keep, self.stamp)
        self.summary.chunks_pruned = self.store.prune(self.source_prefix, self.stamp)
        documents.record(self.store.connection, self.documents, self.chunker_key, self.stamp)
        documents.forget_orphans(self.store.connection, self.source_prefix)

    def record(self, source: Source) -> SourceRecord:
        summary = self.summary
        return source.record().model_copy(
            update={
                "prefix": self.source_prefix,
                "listing": self.listing,
                "documents": len(self.keep) + summary.files_new + summary.files_changed,
                "read": summary.files_read,
                "unchanged": summary.files_unchanged,
                "skipped": len(summary.skipped),
                "failed": len(summary.failed),
            }
        )

    def _problem(self, page: str, problem: Problem) -> None:
        """Report a document once; ``keep`` leaves its previously indexed chunks in place."""
        source = self.source_prefix + page
        summary = self.summary
        (summary.skipped if problem.skipped else summary.failed).append(
            FileProblem(source=source, reason=problem.reason)
        )
        logger.warning(
            "%s: %s: %s", source, "skipped" if problem.skipped else "failed", problem.reason
        )
        if problem.keep and source in self.known:
            self.keep.append(source)


def _mime_type(chunker: Chunker | BinaryChunker, source: str, data: bytes) -> str:
    return chunker.mime_type(source, data[:8192]) if isinstance(chunker, CompositeChunker) else ""


def _chunker_key(
    chunker: Chunker | BinaryChunker, urls: UrlRule, metadata: Mapping[str, str]
) -> str:
    # Dataclass chunkers (and the URL rule) repr their settings, so changing e.g. max_chars,
    # the base URL or the slice's values goes over every file again (new metadata alone
    # re-embeds nothing: it is outside the etag).
    stamped = sorted(metadata.items())
    key = f"{chunkers.CHUNKING_VERSION}:{chunker!r}:{urls!r}"
    if stamped:  # unsliced runs keep the key they had, so no index is re-chunked for this
        key += f":{stamped!r}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _progress(fetched: Iterable[Fetched], run: _Run, enabled: bool | None) -> Iterator[Fetched]:
    with counted(len(run.to_read), "document", "indexing", enabled) as advance:
        for one in fetched:
            yield one
            advance(1)
