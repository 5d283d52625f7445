"""The libraries an index holds (a bundle's, ``bundle.py``), as agents see them: listed with
their versions and sizes, and a search scoped to one of them.

Everything here is read from the manifest (``libraries``, ``sources`` and ``slices``), so it
loads no model and reads no chunk.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from .errors import UnknownLibraryError
from .index.manifest import LibraryRecord, Manifest

LIBRARY_KEY = "library"  # the metadata keys a bundle's chunks carry
VERSION_KEY = "version"


class LibraryVersion(BaseModel):
    version: str | None = Field(description="None: the library's docs without a version.")
    chunks: int
    pages: int = Field(description="Documents (files or pages) of this version.")
    source: str | None = Field(None, description="Where they were read from (no credentials).")
    commit: str | None = Field(None, description="A git source's commit.")


class LibraryInfo(BaseModel):
    """One library of the index, with each version it holds."""

    name: str
    description: str | None = None
    versions: list[LibraryVersion]

    @property
    def chunks(self) -> int:
        return sum(version.chunks for version in self.versions)


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
