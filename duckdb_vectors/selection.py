"""Which files of a docs folder are indexed: the user's patterns, the folder's ignore files,
and not the build output and static assets a documentation tree carries.

A file is indexed when it matches an ``include`` pattern (if any are given) and no ``exclude``
pattern (gitignore patterns, read by ``pathspec``). Without ``include`` patterns, a file is
also left out when an ignore file of the folder's root (``IGNORE_FILES``) ignores it, or when
it is an asset or lies in a build-output folder (``ASSET_SUFFIXES``, ``ASSET_NAMES``,
``OUTPUT_FOLDERS``); ``include`` overrides those defaults (``_static/*.js`` gets them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pathspec import GitIgnoreSpec

IGNORE_FILES = (".gitignore", ".duckdb-vectors-ignore")
# Build output and dependency folders of Sphinx, MkDocs, Jekyll, Docusaurus and npm. A built
# Sphinx site's _sources holds copies of the sources of its pages.
OUTPUT_FOLDERS = frozenset(
    {"_build", "_site", "_static", "_sources", "site", "node_modules", ".docusaurus", "__pycache__"}
)
# Text files that are assets, not documentation (binary ones are skipped as binary anyway).
ASSET_SUFFIXES = frozenset(
    {".js", ".mjs", ".cjs", ".css", ".scss", ".sass", ".less", ".map", ".svg", ".lock"}
)
# Files a built site generates from its pages: MkDocs' search index repeats the whole site.
ASSET_NAMES = frozenset({"search_index.json", "sitemap.xml"})


@dataclass
class FileSelection:
    """The rules for one folder; paths are relative to it, with ``/`` separators."""

    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    ignored: GitIgnoreSpec = field(default_factory=lambda: GitIgnoreSpec.from_lines([]))
    _included: GitIgnoreSpec = field(init=False, repr=False)
    _excluded: GitIgnoreSpec = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._included = GitIgnoreSpec.from_lines(self.include)
        self._excluded = GitIgnoreSpec.from_lines(self.exclude)

    @classmethod
    def for_folder(
        cls, root: Path, include: Sequence[str] = (), exclude: Sequence[str] = ()
    ) -> FileSelection:
        texts: list[str] = []
        for name in IGNORE_FILES:
            try:
                texts.append((root / name).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
        return cls.with_ignore_files(texts, include, exclude)

    @classmethod
    def with_ignore_files(
        cls, texts: Sequence[str], include: Sequence[str] = (), exclude: Sequence[str] = ()
    ) -> FileSelection:
        """The rules given the text of the root's ignore files (``IGNORE_FILES``), wherever
        they were read from (a folder, a git tree)."""
        lines = [line for text in texts for line in text.splitlines()]
        return cls(tuple(include), tuple(exclude), GitIgnoreSpec.from_lines(lines))

    def enters(self, relative_folder: str) -> bool:
        """Whether to walk into a folder at all (patterns may still select files in it)."""
        if self.include:
            return True
        name = relative_folder.rsplit("/", 1)[-1]
        return name not in OUTPUT_FOLDERS and not self.ignored.match_file(relative_folder + "/")

    def selects(self, relative: str) -> bool:
        if self._excluded.match_file(relative):
            return False
        if self.include:
            return self._included.match_file(relative)
        path = PurePosixPath(relative)
        if path.suffix.lower() in ASSET_SUFFIXES or path.name.lower() in ASSET_NAMES:
            return False
        return not self.ignored.match_file(relative)
