"""``index_folder``: mirror a folder of documents into an index, incrementally and safely.

Each file is dispatched by MIME type to a chunker. A file whose bytes and chunker settings
are unchanged since the last run is not chunked again; a changed file's chunks are upserted,
and only chunks whose text changed are embedded (a moved paragraph reuses its vector). Files
that disappeared, and the tail of files that got shorter, are pruned. The whole run is one
transaction: a crash or Ctrl-C leaves the previous index intact and searchable.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from . import chunkers, links
from .chunkers import (
    SNIFF_BYTES,
    BinaryChunker,
    Chunker,
    CompositeChunker,
    decode_text,
    default_chunker,
)
from .citations import UrlRule
from .config import DEFAULT_MAX_FILE_BYTES
from .errors import DuckDBVectorsError, SkipFile
from .index import documents, slices
from .models import Chunk
from .progress import counted
from .rows import embedding_text
from .selection import FileSelection
from .store import VectorStore, WriteStats

logger = logging.getLogger(__name__)


class FileProblem(BaseModel):
    """A file that was not indexed, and why."""

    source: str
    reason: str


class IndexSummary(BaseModel):
    """What an ``index_folder`` run did."""

    folder: str
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
    chunks_embedded: int = 0
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


@dataclass(frozen=True)
class _Entry:
    """A file found by the walk, or a path the walk refused (``problem`` set)."""

    source: str
    path: Path
    problem: str | None = None


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
        chunker: replaces the default composite chunker (Markdown, reST, HTML, notebooks, PDF
            and text, by MIME type).
        max_file_bytes: larger files are skipped, with the reason in the summary.
        source_prefix: prepended to every source; pruning only touches sources with it, so
            several folders (or a runtime registry) can share one index. Default: none, or
            for a slice (``metadata``) its values as folders, e.g. ``2.0/``.
        urls: how each document's public URL is found (``citations.UrlRule``); by default
            only from front matter naming an absolute URL.
        metadata: a slice, e.g. ``{"version": "2.0"}``: stamped onto every chunk written, so
            a filter selects it. Each slice needs its own source prefix (see ``slices``); a
            run whose prefix holds another slice raises ``SliceError``.
        progress: show a progress bar on stderr; default: only when stderr is a terminal.
    """
    started = time.monotonic()
    root = Path(folder)
    if not root.is_dir():
        raise DuckDBVectorsError(f"{folder} is not a folder; pass the folder to index")
    chunker = chunker or default_chunker()
    metadata = slices.checked(metadata or {})
    if source_prefix is None:
        source_prefix = slices.default_prefix(metadata)
    slices.check_scope(store.connection, source_prefix, metadata, store.slice_keys)
    summary = IndexSummary(folder=str(folder))
    before, now = store.retokenized_from, store.manifest
    if before is not None and now is not None:  # done as the store opened, in the same run
        summary.chunks_retokenized = before.chunk_count
        changed = ("language", "tokenizer")[before.language == now.language]
        summary.retokenized = f"{getattr(before, changed)} -> {getattr(now, changed)}"
    selection = FileSelection.for_folder(root, include, exclude)
    entries = sorted(
        _walk(root, recursive, include_hidden, selection, source_prefix),
        key=lambda entry: entry.source,
    )
    pages = links.Pages(e.source[len(source_prefix) :] for e in entries if e.problem is None)
    urls = urls or UrlRule()
    run = _Run(store, chunker, summary, max_file_bytes, source_prefix, urls, metadata, pages)
    collector = _WarningCollector(summary)
    chunker_logger = logging.getLogger("duckdb_vectors.chunkers")
    chunker_logger.addHandler(collector)
    try:
        with store.transaction():
            store.record_slice_keys(metadata)
            # A generator: files are read and chunked while earlier batches are embedded.
            chunks = (chunk for entry in _progress(entries, progress) for chunk in run.add(entry))
            summary.count(store.add_chunks(chunks, stamp=run.stamp))
            run.finish()
    finally:
        chunker_logger.removeHandler(collector)
    summary.seconds = round(time.monotonic() - started, 3)
    return summary


def first_indexable_file(folder: str | Path) -> str | None:
    """The first file of ``folder`` (as ``index_folder`` walks it by default) whose type can be
    indexed, judged by its name and first bytes without chunking it; None if there is none."""
    root = Path(folder)
    composite = default_chunker()
    for entry in _walk(root, True, False, FileSelection.for_folder(root), ""):
        if entry.problem is None:
            try:
                with entry.path.open("rb") as file:
                    head = file.read(SNIFF_BYTES)
            except OSError:
                continue
            if composite.can_index(entry.source, head):
                return entry.source
    return None


class _Run:
    """One indexing run: per-file decisions, and the final prune."""

    def __init__(
        self,
        store: VectorStore,
        chunker: Chunker | BinaryChunker,
        summary: IndexSummary,
        max_file_bytes: int,
        source_prefix: str,
        urls: UrlRule,
        metadata: dict[str, str],
        pages: links.Pages,
    ) -> None:
        self.store = store
        self.chunker = chunker
        self.summary = summary
        self.max_file_bytes = max_file_bytes
        self.source_prefix = source_prefix
        self.urls = urls
        self.metadata = metadata
        self.pages = pages
        self.stamp = datetime.now(UTC)
        self.chunker_key = _chunker_key(chunker, urls, metadata)
        # A custom embedder may not say how much of a text it embeds.
        self.windows = getattr(store.embedder, "windows", lambda texts: [1] * len(texts))
        self.known = documents.known(store.connection, source_prefix)
        self.keep: list[str] = []  # sources whose stored chunks stay as they are
        self.documents: list[documents.Document] = []

    def add(self, entry: _Entry) -> list[Chunk]:
        """The chunks to write for a file: none if it is unchanged or cannot be indexed."""
        if entry.problem is not None:
            self._problem(entry.source, entry.problem, skipped=True, keep=False)
            return []
        self.summary.files_seen += 1
        try:
            data = _read_stable(entry.path, self.max_file_bytes)
        except SkipFile as reason:
            self._problem(entry.source, str(reason), skipped=True, keep=True)
            return []
        except FileNotFoundError:
            self._problem(entry.source, "vanished while indexing", skipped=False, keep=False)
            return []
        except OSError as error:
            reason = f"unreadable: {error.strerror or error}"
            self._problem(entry.source, reason, skipped=False, keep=True)
            return []
        page = entry.source[len(self.source_prefix) :]
        # The chunks depend on the bytes and on which pages their links name (``links``).
        content_hash = hashlib.sha256(data).hexdigest()[:48] + links.fingerprint(
            data, page, self.pages
        )
        if self.known.get(entry.source) == (content_hash, self.chunker_key):
            self.summary.files_unchanged += 1
            self.keep.append(entry.source)
            return []
        try:
            chunks = _chunk(self.chunker, data, entry.source)
        except SkipFile as reason:
            self._problem(entry.source, str(reason), skipped=True, keep=False)
            return []
        except Exception as error:  # a chunker bug or a hostile file must not stop the run
            reason = f"{type(error).__name__}: {error}"
            self._problem(entry.source, reason, skipped=False, keep=True)
            return []
        self.summary.chunks_past_window += self._past_window(chunks)
        if entry.source in self.known:
            self.summary.files_changed += 1
        else:
            self.summary.files_new += 1
        mime_type = _mime_type(self.chunker, entry.source, data)
        self.documents.append(
            documents.Document(entry.source, content_hash, mime_type, len(data), len(chunks))
        )
        chunks = links.rewrite(chunks, page, self.pages, self.urls, self.source_prefix)
        return slices.stamp(self.urls.cite(chunks, page), self.metadata)

    def _past_window(self, chunks: list[Chunk]) -> int:
        """How many chunks are longer than the model embeds: BM25 reads all of their text,
        their vectors only its start. They are not split: on the Ray docs questions, cutting
        them to fit cost page hits with both models measured (bench/docsqa.py; MiniLM, one
        per page, hit@13 0.716 -> 0.678; static 0.682 -> 0.640)."""
        return sum(count > 1 for count in self.windows([embedding_text(c) for c in chunks]))

    def finish(self) -> None:
        self.store.restamp(self.keep, self.stamp)
        self.summary.chunks_pruned = self.store.prune(self.source_prefix, self.stamp)
        documents.record(self.store.connection, self.documents, self.chunker_key, self.stamp)
        documents.forget_orphans(self.store.connection, self.source_prefix)

    def _problem(self, source: str, reason: str, *, skipped: bool, keep: bool) -> None:
        """Report a file once; ``keep`` leaves its previously indexed chunks in place."""
        (self.summary.skipped if skipped else self.summary.failed).append(
            FileProblem(source=source, reason=reason)
        )
        logger.warning("%s: %s: %s", source, "skipped" if skipped else "failed", reason)
        if keep and source in self.known:
            self.keep.append(source)


def _walk(
    root: Path, recursive: bool, include_hidden: bool, selection: FileSelection, prefix: str
) -> Iterator[_Entry]:
    """Regular files under ``root``. Symlinks are followed only to targets inside ``root``,
    and each folder is visited once, so links cannot leak outside files or loop.

    Only symlinks are resolved: any other entry's real path is its folder's plus its name, and
    scandir already knows its type (resolving every path cost a system call per component).
    """
    real_root = root.resolve()
    visited = {real_root}
    pending = [(root, real_root)]
    while pending:
        directory, real_directory = pending.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda item: item.name)
        except OSError as error:
            yield _Entry(
                _source(root, directory, prefix),
                directory,
                f"unreadable folder: {error.strerror or error}",
            )
            continue
        for item in entries:
            if item.name.startswith(".") and not include_hidden:
                continue
            path = Path(item.path)
            source = _source(root, path, prefix)
            if item.is_symlink():
                target, problem = _follow(path, real_root)
                if problem:
                    yield _Entry(source, path, problem)
                    continue
                is_dir, is_file = target.is_dir(), target.is_file()
            else:
                target = real_directory / item.name
                is_dir, is_file = item.is_dir(), item.is_file()
            relative = source[len(prefix) :]
            if is_dir:
                if recursive and target not in visited and selection.enters(relative):
                    visited.add(target)
                    pending.append((path, target))
            elif not is_file:
                yield _Entry(source, path, "not a regular file")
            elif selection.selects(relative):
                yield _Entry(source, path)


def _follow(link: Path, real_root: Path) -> tuple[Path, str | None]:
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):
        return link, "broken symlink or symlink loop"
    if not target.is_relative_to(real_root):
        return target, "symlink points outside the folder (not followed)"
    return target, None


def _source(root: Path, path: Path, prefix: str) -> str:
    return prefix + path.relative_to(root).as_posix()


def _read_stable(path: Path, max_bytes: int) -> bytes:
    """The file's bytes, refusing files over the size limit or changing while read."""
    before = path.stat()
    if before.st_size > max_bytes:
        raise SkipFile(
            f"larger than the {max_bytes / 1e6:g} MB limit ({before.st_size / 1e6:.1f} MB);"
            " raise max_file_bytes (--max-file-size) to index it"
        )
    with path.open("rb") as handle:
        data = handle.read(max_bytes + 1)
    after = path.stat()
    changed = (before.st_mtime_ns, before.st_size) != (after.st_mtime_ns, after.st_size)
    if changed or len(data) != after.st_size:
        raise SkipFile("changed while being read; run the index again")
    return data


def _chunk(chunker: Chunker | BinaryChunker, data: bytes, source: str) -> list[Chunk]:
    if isinstance(chunker, BinaryChunker):
        chunks = chunker.chunk_bytes(data, source)
    else:
        chunks = chunker.chunk(decode_text(data), source)
    if not chunks:
        raise SkipFile("no text to index")
    return chunks


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


def _progress(entries: list[_Entry], enabled: bool | None) -> Iterator[_Entry]:
    with counted(len(entries), "file", "indexing", enabled) as advance:
        for entry in entries:
            yield entry
            advance(1)
