"""A folder on this machine: its files, as ``selection.FileSelection`` picks them.

A file is confirmed unchanged, without being read, by what ``stat`` says of it, as git's index
does: its size, its modification and change times and its inode. The kernel sets the change
time on every write and no tool sets it back, so a file copied with its old modification time
(``cp -p``, ``rsync -t``, a build context whose times are all 0) still reads as changed. A file
written less than ``RACY_SECONDS`` before it is read keeps no validators: a second write within
the same clock tick would leave them equal, so the next run reads it again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from ..errors import SkipFile
from ..selection import FileSelection
from . import Entry, Fetched, InvalidSourceError, Problem, Source, SourceRecord, Validators

RACY_SECONDS = 1.0


class FolderSource(Source):
    kind = "folder"

    @classmethod
    def matches(cls, location: str) -> bool:
        return "://" not in location

    @property
    def root(self) -> Path:
        return Path(self.location)

    def list(self, previous: Mapping[str, Validators]) -> list[Entry]:
        if not self.root.is_dir():
            raise InvalidSourceError(f"{self.location} is not a folder; pass the folder to index")
        options = self.options
        selection = FileSelection.for_folder(self.root, options.include, options.exclude)
        self._listed_at = datetime.now(UTC)
        walked = walk(self.root, options.recursive, options.include_hidden, selection)
        self.entries = sorted(walked, key=lambda entry: entry.source)
        return self.entries

    def read(
        self, entries: Sequence[Entry], previous: Mapping[str, Validators]
    ) -> Iterator[Fetched]:
        for entry in entries:
            yield self._read(entry.source, previous.get(entry.source))

    def _read(self, source: str, stored: Validators | None) -> Fetched:
        path = self.root / source
        try:
            validators = stat_validators(path.stat(), time.time())
            if validators and validators == stored:
                return Fetched(source, unchanged=True, validators=validators)
            data = read_stable(path, self.options.max_file_bytes)
        except SkipFile as reason:
            return Fetched(source, problem=Problem(str(reason), skipped=True))
        except FileNotFoundError:
            return Fetched(source, problem=Problem("vanished while indexing", keep=False))
        except OSError as error:
            return Fetched(source, problem=Problem(f"unreadable: {error.strerror or error}"))
        return Fetched(source, data=data, validators=validators)

    def record(self) -> SourceRecord:
        return SourceRecord(kind=self.kind, location=str(self.root), fetched_at=self._listed_at)


def walk(
    root: Path, recursive: bool, include_hidden: bool, selection: FileSelection
) -> Iterator[Entry]:
    """Regular files under ``root``. Symlinks are followed only to targets inside ``root``,
    and each folder is visited once, so links cannot leak outside files or loop.

    Only symlinks are resolved: any other entry's real path is its folder's plus its name, and
    scandir already knows its type (resolving every path costs a system call per component).
    """
    real_root = root.resolve()
    visited = {real_root}
    pending = [(root, real_root)]
    while pending:
        directory, real_directory = pending.pop()
        try:
            items = sorted(os.scandir(directory), key=lambda item: item.name)
        except OSError as error:
            reason = f"unreadable folder: {error.strerror or error}"
            yield Entry(_relative(root, directory), Problem(reason, skipped=True, keep=False))
            continue
        for item in items:
            if item.name.startswith(".") and not include_hidden:
                continue
            path = Path(item.path)
            relative = _relative(root, path)
            if item.is_symlink():
                target, problem = _follow(path, real_root)
                if problem:
                    yield Entry(relative, Problem(problem, skipped=True, keep=False))
                    continue
                is_dir, is_file = target.is_dir(), target.is_file()
            else:
                target = real_directory / item.name
                is_dir, is_file = item.is_dir(), item.is_file()
            if is_dir:
                if recursive and target not in visited and selection.enters(relative):
                    visited.add(target)
                    pending.append((path, target))
            elif not is_file:
                yield Entry(relative, Problem("not a regular file", skipped=True, keep=False))
            elif selection.selects(relative):
                yield Entry(relative)


def _follow(link: Path, real_root: Path) -> tuple[Path, str | None]:
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):
        return link, "broken symlink or symlink loop"
    if not target.is_relative_to(real_root):
        return target, "symlink points outside the folder (not followed)"
    return target, None


def _relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def stat_validators(stat: os.stat_result, now: float) -> dict[str, str]:
    """What confirms a file unchanged (see the module); none for a file written just now."""
    if now - max(stat.st_mtime, stat.st_ctime) < RACY_SECONDS:
        return {}
    return {"stat": f"{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}:{stat.st_ino}"}


def read_stable(path: Path, max_bytes: int) -> bytes:
    """The file's bytes, refusing files over the size limit or changing while read."""
    before = path.stat()
    if before.st_size > max_bytes:
        raise SkipFile(too_large(before.st_size, max_bytes))
    with path.open("rb") as handle:
        data = handle.read(max_bytes + 1)
    after = path.stat()
    changed = (before.st_mtime_ns, before.st_size) != (after.st_mtime_ns, after.st_size)
    if changed or len(data) != after.st_size:
        raise SkipFile("changed while being read; run the index again")
    return data


def too_large(size: int, max_bytes: int) -> str:
    """Why a document of ``size`` bytes is skipped."""
    return (
        f"larger than the {max_bytes / 1e6:g} MB limit ({size / 1e6:.1f} MB);"
        " raise max_file_bytes (--max-file-size) to index it"
    )
