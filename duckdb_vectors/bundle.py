"""A docs bundle: the documentation of several libraries (and versions) in one index.

A bundle file (``docs.yaml``, or ``docs.toml``) lists one entry per library and version, each
naming any SOURCE an index run reads::

    libraries:
      - name: ray
        version: "2.9"
        source: git+https://github.com/ray-project/ray@ray-2.9.0#subdirectory=doc/source
        base_url: https://docs.ray.io/en/releases-2.9.0/
        description: Ray, a framework for distributed Python
      - name: duckdb
        version: "1.4"
        source: ./duckdb-docs
      - name: handbuch
        source: ./handbook
        language: german

Each entry is a slice (``index.slices``): its chunks carry ``library`` and ``version`` in their
metadata and live under the prefix ``NAME/VERSION/``, so a search scoped to a library is a
metadata filter, and rebuilding the bundle re-reads and re-embeds only what changed in each
library (the one incremental run, ``indexer.index_source``, per entry). The bundle owns the
index: a library or version no longer listed is pruned. An entry's ``language`` is the Snowball
language its words are indexed and searched in (``index.languages``; none: the index's).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .citations import UrlRule, UrlStyle
from .errors import BundleError, DuckDBVectorsError
from .index.manifest import LibraryRecord
from .index.slices import LIBRARY_KEY, VERSION_KEY, library_key
from .index.terms import own_language
from .indexer import IndexSummary, index_source
from .sources import SourceOptions, open_source
from .store import VectorStore

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")


class Library(BaseModel):
    """One entry of a bundle: a library at one version, and where its docs are."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Lowercase letters, digits, '.', '_' and '-': 'ray', 'duckdb'.")
    version: str | None = Field(None, description="E.g. '2.9'; none: the docs as they are.")
    source: str = Field(description="Any SOURCE `index` reads: a folder, git+..., a URL.")
    description: str | None = Field(None, description="What the library is, for agents.")
    base_url: str | None = Field(None, description="Where these docs are published (citations).")
    url_style: UrlStyle = "html"
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    language: str | None = Field(
        None, description="The Snowball language of its words ('german'); none: the index's."
    )

    @field_validator("name")
    @classmethod
    def _slug(cls, name: str) -> str:
        if not _NAME.fullmatch(name):
            raise ValueError("must be lowercase letters, digits, '.', '_' or '-', e.g. 'ray'")
        return name

    @field_validator("version")
    @classmethod
    def _one_folder(cls, version: str | None) -> str | None:
        if version is not None and (not version.strip() or "/" in version):
            raise ValueError("must be a non-empty version without '/', e.g. '2.9'")
        return version

    _stemmed = field_validator("language")(own_language)

    @property
    def key(self) -> str:
        """How a user names it: ``ray@2.9``, or ``ray``."""
        return library_key(self.name, self.version)

    @property
    def metadata(self) -> dict[str, str]:
        """The slice its chunks are stamped with."""
        versioned = {VERSION_KEY: self.version} if self.version else {}
        return {LIBRARY_KEY: self.name, **versioned}

    @property
    def prefix(self) -> str:
        return f"{self.name}/{self.version}/" if self.version else f"{self.name}/"

    def record(self) -> LibraryRecord:
        return LibraryRecord(
            name=self.name,
            version=self.version,
            description=self.description,
            prefix=self.prefix,
            language=self.language,
        )


class Bundle(BaseModel):
    """The libraries of one index."""

    model_config = ConfigDict(extra="forbid")

    libraries: list[Library] = Field(min_length=1)

    @classmethod
    def read(cls, path: str | Path) -> Bundle:
        """The bundle in ``path`` (YAML, or TOML by its ``.toml`` suffix); a bad file is one
        ``BundleError`` line naming it, the entry and what to fix. Relative folder sources are
        read relative to the bundle file's folder."""
        path = Path(path)
        document = _load(path)
        try:
            bundle = cls.model_validate(document)
        except ValidationError as error:
            raise BundleError(f"{path}: {_first_problem(error, document)}") from None
        bundle._check_unique(path)
        return bundle.relative_to(path.parent)

    def relative_to(self, folder: Path) -> Bundle:
        """The bundle with each relative folder source made relative to ``folder``."""
        libraries = [
            entry.model_copy(update={"source": str(folder / entry.source)})
            if "://" not in entry.source and not Path(entry.source).is_absolute()
            else entry
            for entry in self.libraries
        ]
        return self.model_copy(update={"libraries": libraries})

    def _check_unique(self, path: Path) -> None:
        seen: set[str] = set()
        for entry in self.libraries:
            if entry.key in seen:
                raise BundleError(f"{path}: {entry.key} is listed twice; list each version once")
            seen.add(entry.key)
        versioned = {e.name for e in self.libraries if e.version}
        for entry in self.libraries:
            if entry.version is None and entry.name in versioned:
                raise BundleError(
                    f"{path}: {entry.name} is listed with and without a version;"
                    " give every entry of a library its version"
                )


class LibraryRun(BaseModel):
    """What indexing one library of a bundle did."""

    name: str
    version: str | None
    summary: IndexSummary


class BundleSummary(BaseModel):
    """What an ``index_bundle`` run did."""

    bundle: str
    libraries: list[LibraryRun] = Field(default_factory=list)
    chunks_pruned: int = Field(0, description="Chunks of libraries the bundle no longer lists.")
    seconds: float = 0.0


def index_bundle(
    store: VectorStore,
    bundle: Bundle,
    *,
    name: str = "",
    options: SourceOptions | None = None,
    progress: bool | None = None,
) -> BundleSummary:
    """Index every library of ``bundle`` into ``store``, each as its own slice, in one
    transaction, and prune the libraries it no longer lists. A library's words are read in its
    own ``language`` (else the index's); a library whose language changed is re-tokenized in
    the new one, its vectors kept.

    ``options`` apply to every source (an entry's ``include``/``exclude`` are added to them).
    Any error leaves the index as it was before the run.
    """
    base = options or SourceOptions()
    summary = BundleSummary(bundle=name)
    with store.transaction():
        retokenized = store.record_libraries([entry.record() for entry in bundle.libraries])
        for entry in bundle.libraries:
            run = _index_library(store, entry, base, progress)
            if entry.key in retokenized:
                run.summary.retokenized = retokenized[entry.key].languages
                run.summary.chunks_retokenized = retokenized[entry.key].chunks
            summary.libraries.append(run)
        summary.chunks_pruned = _prune_unlisted(store, bundle)
    summary.seconds = round(sum(run.summary.seconds for run in summary.libraries), 3)
    return summary


def _index_library(
    store: VectorStore, entry: Library, base: SourceOptions, progress: bool | None
) -> LibraryRun:
    options = SourceOptions(
        **{
            **_options_dict(base),
            "include": [*base.include, *entry.include],
            "exclude": [*base.exclude, *entry.exclude],
        }
    )
    urls = UrlRule(entry.base_url, entry.url_style) if entry.base_url else None
    try:
        source = open_source(entry.source, options)
        summary = index_source(
            store,
            source,
            source_prefix=entry.prefix,
            urls=urls,
            metadata=entry.metadata,
            progress=progress,
        )
    except DuckDBVectorsError as error:
        raise BundleError(f"library {entry.key}: {error}") from None
    if not any(source.startswith(entry.prefix) for source in store.sources()):
        problems = len(summary.skipped) + len(summary.failed)
        raise BundleError(
            f"library {entry.key}: no document of {entry.source} has text to index"
            f" ({summary.files_seen} seen, {problems} skipped or failed); point it at its docs"
            " (or change its include/exclude), or remove it from the bundle"
        )
    return LibraryRun(name=entry.name, version=entry.version, summary=summary)


def _options_dict(options: SourceOptions) -> dict[str, Any]:
    return {name: getattr(options, name) for name in options.__dataclass_fields__}


def _prune_unlisted(store: VectorStore, bundle: Bundle) -> int:
    """Delete the chunks of every source prefix the bundle does not list (an index built
    from a bundle holds the bundle, nothing else)."""
    listed = tuple(entry.prefix for entry in bundle.libraries)
    unlisted = [source for source in store.sources() if not source.startswith(listed)]
    if not unlisted:
        return 0
    return store.delete_where(where=_in_list("source", unlisted))


def _in_list(column: str, values: list[str]) -> str:
    quoted = ", ".join("'" + value.replace("'", "''") + "'" for value in values)
    return f"{column} IN ({quoted})"


def _load(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BundleError(f"{path} does not exist: pass the bundle file (docs.yaml)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise BundleError(f"{path} cannot be read: {error}") from None
    try:
        return tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (yaml.YAMLError, tomllib.TOMLDecodeError) as error:
        first = str(error).splitlines()[0]
        raise BundleError(f"{path} is not valid {path.suffix[1:] or 'YAML'}: {first}") from None


def _first_problem(error: ValidationError, document: Any) -> str:
    problem = error.errors()[0]
    where = list(problem["loc"])
    if not isinstance(document, Mapping):
        return "must be a mapping with a 'libraries' list"
    if len(where) >= 2 and where[0] == "libraries" and isinstance(where[1], int):
        entries = document.get("libraries") or []
        entry = entries[where[1]] if where[1] < len(entries) else {}
        label = _shown(entry.get("name")) if isinstance(entry, Mapping) else None
        field = ".".join(str(part) for part in where[2:]) or "the entry"
        return f"library {label or f'#{where[1] + 1}'}: {field}: {problem['msg']}"
    return f"{'.'.join(str(part) for part in where) or 'the file'}: {problem['msg']}"


def _shown(name: Any) -> str | None:
    """A library's name as an error shows it: quoted with escapes if it has characters that
    would break the one line (a newline, a control character)."""
    if not name:
        return None
    text = str(name)
    return text if text.isprintable() else repr(text)
