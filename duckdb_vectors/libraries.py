"""The libraries an index holds (a bundle's, ``bundle.py``), as agents see them: listed with
their versions and sizes, and a search scoped to one of them.

Everything here is read from the manifest (``libraries``, ``sources`` and ``slices``), so it
loads no model and reads no chunk.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from .errors import UnknownLibraryError
from .index.manifest import LibraryRecord, Manifest
from .index.slices import LIBRARY_KEY, VERSION_KEY
from .models import SearchResult


class LibraryVersion(BaseModel):
    version: str | None = Field(description="None: the library's docs without a version.")
    chunks: int
    pages: int = Field(description="Documents (files or pages) of this version.")
    source: str | None = Field(None, description="Where they were read from (no credentials).")
    commit: str | None = Field(None, description="A git source's commit.")
    language: str | None = Field(
        None, description="The Snowball language its words are searched in (english, german ...)."
    )


class LibraryInfo(BaseModel):
    """One library of the index, with each version it holds."""

    name: str
    description: str | None = None
    versions: list[LibraryVersion]

    @property
    def chunks(self) -> int:
        return sum(version.chunks for version in self.versions)

    @property
    def languages(self) -> list[str]:
        """The languages its versions are searched in, each once."""
        return list(dict.fromkeys(v.language for v in self.versions if v.language))


def listed(manifest: Manifest | None) -> list[LibraryInfo]:
    """The index's libraries, by name, each with its versions (newest recorded first as the
    bundle lists them)."""
    if manifest is None:
        return []
    by_name: dict[str, LibraryInfo] = {}
    for record in manifest.libraries:
        info = by_name.setdefault(
            record.name, LibraryInfo(name=record.name, description=None, versions=[])
        )
        info.description = info.description or record.description
        info.versions.append(_version(manifest, record))
    return sorted(by_name.values(), key=lambda info: info.name)


def _version(manifest: Manifest, record: LibraryRecord) -> LibraryVersion:
    wanted = {LIBRARY_KEY: record.name}
    if record.version:
        wanted[VERSION_KEY] = record.version
    chunks = sum(
        one.chunk_count
        for one in manifest.slices
        if all(one.metadata.get(key) == value for key, value in wanted.items())
        and (record.version or VERSION_KEY not in one.metadata)
    )
    source = next((s for s in manifest.sources if s.prefix == record.prefix), None)
    return LibraryVersion(
        version=record.version,
        chunks=chunks,
        pages=source.documents if source else 0,
        source=source.location if source else None,
        commit=source.commit if source else None,
        language=record.language or manifest.language,
    )


def label(metadata: dict | None) -> str | None:
    """How a hit names its library: ``ray 2.9``; None for a chunk of no library."""
    name = (metadata or {}).get(LIBRARY_KEY)
    if not isinstance(name, str):
        return None
    version = (metadata or {}).get(VERSION_KEY)
    return f"{name} {version}" if isinstance(version, str) else name


def scope(manifest: Manifest | None, library: str, version: str | None = None) -> dict[str, str]:
    """The metadata filter of a search scoped to ``library`` (and ``version``); an unknown one
    is one ``UnknownLibraryError`` line listing what the index holds."""
    known = {info.name: info for info in listed(manifest)}
    if not known:
        raise UnknownLibraryError(
            "this index holds no libraries (it was not built from a bundle); search it"
            " without a library"
        )
    info = known.get(library.strip().lower())
    if info is None:
        raise UnknownLibraryError(
            f"no library {library!r} in this index; it holds {', '.join(sorted(known))}"
        )
    wanted = {LIBRARY_KEY: info.name}
    if version is not None:
        versions = [v.version for v in info.versions if v.version]
        if version not in versions:
            held = ", ".join(versions) or "no versions"
            raise UnknownLibraryError(f"{info.name} has no version {version!r} here; it has {held}")
        wanted[VERSION_KEY] = version
    return wanted


def document_id(manifest: Manifest | None, id: str, library: str, version: str | None) -> str:
    """A document or chunk id given relative to a library (``data/index.md`` of ray 2.9) as
    the index's id (``ray/2.9/data/index.md``); an id that already carries the library's prefix
    is kept. A library of several versions needs ``version``."""
    wanted = scope(manifest, library, version)
    records = [
        record
        for record in (manifest.libraries if manifest else [])
        if record.name == wanted[LIBRARY_KEY] and (version is None or record.version == version)
    ]
    if len(records) > 1:
        held = ", ".join(record.version or "-" for record in records)
        raise UnknownLibraryError(f"{records[0].name} has versions {held}: pass version too")
    prefix = records[0].prefix
    return id if id.startswith(prefix) else prefix + id.lstrip("/")


class Resolved(BaseModel):
    """A library (and version) a loose name or a question may mean, with why."""

    name: str
    version: str | None
    score: float = Field(description="Higher is likelier; comparable within one answer only.")
    description: str | None = None
    reason: str = Field(description="What matched: its name, its version, its docs.")


# How much a library's name or version in the words of a request outweighs its docs matching.
NAME_WEIGHT = 10.0
VERSION_WEIGHT = 3.0
RESOLVE_DEPTH = 50  # the keyword hits a resolution weighs
_WORD = re.compile(r"[a-z0-9][a-z0-9._-]*")


class KeywordSearchable(Protocol):
    """What ``resolve_request`` reads of an index (a ``VectorStore``)."""

    @property
    def manifest(self) -> Manifest | None: ...

    def query_text(self, text: str, top_k: int) -> Sequence[SearchResult]: ...


def resolve_request(store: KeywordSearchable, request: str) -> list[Resolved]:
    """``resolve`` of ``request`` over the ``RESOLVE_DEPTH`` best keyword hits of it across
    all libraries (loads no model)."""
    return resolve(store.manifest, request, store.query_text(request, RESOLVE_DEPTH))


def resolve(
    manifest: Manifest | None, request: str, hits: Sequence[SearchResult]
) -> list[Resolved]:
    """The index's libraries ranked for ``request`` ("ray data", "pydantic v2", "how do I read
    a parquet file in duckdb"): a library it names (as a whole word) first, the version it
    names next, then by how well the library's docs answer it (``hits``: a keyword search of
    ``request`` across all libraries, each hit counting 1/rank for its library and version).
    Libraries that match in none of these ways are left out."""
    words = set(_WORD.findall(request.lower()))
    evidence: dict[tuple[str, str | None], float] = {}
    for rank, hit in enumerate(hits, 1):
        name = hit.chunk.metadata.get(LIBRARY_KEY)
        version = hit.chunk.metadata.get(VERSION_KEY)
        if isinstance(name, str):
            key = (name, version if isinstance(version, str) else None)
            evidence[key] = evidence.get(key, 0.0) + 1.0 / rank
    answers = []
    for info in listed(manifest):
        named = _named(info.name, words)
        for version in info.versions:
            asked = version.version is not None and _version_asked(version.version, words)
            docs = evidence.get((info.name, version.version), 0.0)
            score = NAME_WEIGHT * named + VERSION_WEIGHT * asked + docs
            if score <= 0:
                continue
            reasons = [
                reason
                for reason, present in (
                    ("its name", named),
                    ("its version", asked),
                    ("its docs", docs),
                )
                if present
            ]
            answers.append(
                Resolved(
                    name=info.name,
                    version=version.version,
                    score=round(score, 4),
                    description=info.description,
                    reason="matched " + " and ".join(reasons),
                )
            )
    return sorted(answers, key=lambda answer: (-answer.score, answer.name, answer.version or ""))


def _named(name: str, words: set[str]) -> float:
    """1 when the request names the library; 0.5 when it names every part of a compound
    name ("scikit learn" for scikit-learn)."""
    if name in words:
        return 1.0
    parts = [part for part in re.split(r"[._-]", name) if part]
    return 0.5 if len(parts) > 1 and all(part in words for part in parts) else 0.0


def _version_asked(version: str, words: set[str]) -> bool:
    """Whether a word of the request is this version or its start: "2.9", "v2", "2"."""
    for word in words:
        asked = word.removeprefix("v")
        if asked and (version == asked or version.startswith(asked + ".")):
            return True
    return False
