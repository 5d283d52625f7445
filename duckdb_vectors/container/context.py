"""The build context of a bake: a tar shaped like a checkout of this project (Dockerfiles,
pyproject.toml, README.md, the package), so an installed package can rebuild the toolkit,
plus the documents (a folder; a SOURCE the build fetches sends none) and, optionally, the
model, streamed from where they are.

Every entry gets a fixed owner and time stamp: the same files give the same context, so the
engine reuses its cached toolkit layers and two bakes of the same documents agree.
"""

from __future__ import annotations

import io
import logging
import os
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import duckdb_vectors

from ..errors import DuckDBVectorsError
from ..selection import FileSelection

PACKAGE_DIR = Path(duckdb_vectors.__file__).resolve().parent
BUILD_FILE_NAMES = ("Dockerfile.builder", "Dockerfile.runtime", "pyproject.toml", "README.md")
DOCS_IN_CONTEXT = "input/docs"
MODEL_IN_CONTEXT = "input/model"
NO_MODEL_IN_CONTEXT = "duckdb_vectors/container/no-model"
RUNTIME_DOCKERFILE = "Dockerfile.runtime"
_LEFT_OUT = {"__pycache__", "build_files"}
_COMPILED = (".pyc", ".so", ".pyd")

logger = logging.getLogger(__name__)


def build_files_dir() -> Path:
    """Where the project's build files are: ``duckdb_vectors/build_files`` in a wheel (see
    pyproject.toml), the root of a checkout installed editable."""
    for folder in (PACKAGE_DIR / "build_files", PACKAGE_DIR.parent):
        if all((folder / name).is_file() for name in BUILD_FILE_NAMES):
            return folder
    raise DuckDBVectorsError(
        f"the Dockerfiles are missing from {PACKAGE_DIR}: reinstall duckdb-vectors"
    )


@dataclass(frozen=True)
class BuildContext:
    """A written context, and the build arguments that point the Dockerfile into it."""

    archive: IO[bytes]
    buildargs: dict[str, str]

    def close(self) -> None:
        self.archive.close()


def write_context(
    docs: Path | None,
    model_path: Path | None,
    folders: Mapping[str, Path] | None = None,
    files: Mapping[str, bytes] | None = None,
) -> BuildContext:
    """A tar of the project files, ``docs`` (None: an empty folder, for a SOURCE the build
    fetches, or one holding ``folders`` and ``files`` by their names in it: a bundle's) and
    the model folder, in a temporary file."""
    archive = tempfile.TemporaryFile()  # noqa: SIM115 (closed by BuildContext.close)
    with tarfile.open(fileobj=archive, mode="w") as tar:
        build_files = build_files_dir()
        for name in BUILD_FILE_NAMES:
            _add(tar, build_files / name, name)
        _add_tree(tar, PACKAGE_DIR, "duckdb_vectors")
        if docs is None:
            _add_folder(tar, DOCS_IN_CONTEXT)
        else:
            _add_documents(tar, docs, DOCS_IN_CONTEXT)
        for name, folder in (folders or {}).items():
            _add_documents(tar, folder, f"{DOCS_IN_CONTEXT}/{name}")
        for name, data in (files or {}).items():
            _add_bytes(tar, f"{DOCS_IN_CONTEXT}/{name}", data)
        if model_path is not None:
            _add_tree(tar, model_path, MODEL_IN_CONTEXT)
    archive.seek(0)
    buildargs = {
        "DOCS": DOCS_IN_CONTEXT,
        "MODEL_DIR": MODEL_IN_CONTEXT if model_path is not None else NO_MODEL_IN_CONTEXT,
    }
    return BuildContext(archive, buildargs)


def dockerfile_context(dockerfile: str) -> IO[bytes]:
    """A context holding only a Dockerfile (for the build that adds labels)."""
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        _add_bytes(tar, "Dockerfile", dockerfile.encode())
    archive.seek(0)
    return archive


def _add_documents(tar: tarfile.TarFile, folder: Path, name: str) -> None:
    # What the index stage leaves out is not sent: a node_modules/ can outweigh them.
    _add_tree(tar, folder, name, FileSelection.for_folder(folder))


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    entry = _normalised(tarfile.TarInfo(name))
    entry.size = len(data)
    tar.addfile(entry, io.BytesIO(data))


def _add_folder(tar: tarfile.TarFile, name: str) -> None:
    entry = tarfile.TarInfo(name)
    entry.type = tarfile.DIRTYPE
    tar.addfile(_normalised(entry))


def _add_tree(
    tar: tarfile.TarFile, root: Path, name: str, selection: FileSelection | None = None
) -> None:
    _add(tar, root, name)
    for path, relative in _walk(root, selection):
        _add(tar, path, f"{name}/{relative}")


def _walk(root: Path, selection: FileSelection | None) -> Iterator[tuple[Path, str]]:
    """The entries below ``root`` that ``selection`` keeps, in a stable order; links stay."""
    for folder, subfolders, files in os.walk(root):
        base = Path(folder).relative_to(root).as_posix()

        def relative(entry: str, base: str = base) -> str:
            return entry if base == "." else f"{base}/{entry}"

        if selection is None:  # the package, less bytecode, build files and compiled
            # extensions (the image builds its own)
            subfolders[:] = sorted(d for d in subfolders if d not in _LEFT_OUT)
            kept = sorted(f for f in files if not f.endswith(_COMPILED))
        else:
            subfolders[:] = sorted(d for d in subfolders if selection.enters(relative(d)))
            kept = sorted(f for f in files if selection.selects(relative(f)))
        for entry in subfolders + kept:
            yield Path(folder) / entry, relative(entry)


def _add(tar: tarfile.TarFile, path: Path, name: str) -> None:
    """Add one entry; what cannot be read, or is a socket or device, is left out with a
    warning (the index stage reports what it could not index)."""
    try:
        entry = tar.gettarinfo(path, arcname=name)
        if entry is None or not (entry.isfile() or entry.isdir() or entry.issym()):
            raise OSError("not a file, folder or link")
        if entry.isfile():
            with path.open("rb") as data:
                tar.addfile(_normalised(entry), data)
        else:
            tar.addfile(_normalised(entry))
    except OSError as error:
        logger.warning("%s: left out of the build: %s", path, error.strerror or error)


def _normalised(entry: tarfile.TarInfo) -> tarfile.TarInfo:
    entry.mtime = 0
    entry.uid = entry.gid = 0
    entry.uname = entry.gname = ""
    entry.mode = entry.mode | 0o644 if not entry.isdir() else 0o755
    return entry
