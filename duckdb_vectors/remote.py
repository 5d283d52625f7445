"""A published index: ``--db https://host/docs.duckdb`` opens a local, validated copy of it.

The copy lives in ``<cache>/indexes/``, one file per URL (named by its hash), with a JSON
sidecar of the server's validators (ETag, Last-Modified) and when it was last checked. A copy
older than ``max_age`` is revalidated (304: not downloaded again). A download replaces the copy
only once it reads back whole as an index and (``#sha256=…``) its digest matches. A lock file
serialises refreshes between processes; when the server cannot be reached, the cached copy is
used with one warning saying how old it is.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from .config import DEFAULT_MAX_AGE, describe_age
from .errors import NotAnIndexError, RemoteIndexError
from .index.db import connect, first_line
from .index.manifest import read_manifest
from .index.schema import check_readable

log = logging.getLogger(__name__)

LOCK_TIMEOUT = 600.0  # seconds another process's download may hold the lock
HTTP_TIMEOUT = 30.0  # seconds a read may stall
CONNECT_TIMEOUT = 10.0


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "duckdb-vectors"


@dataclass
class CachedCopy:
    """What the sidecar records about one URL's local copy."""

    url: str
    path: str
    etag: str | None = None
    last_modified: str | None = None
    downloaded_at: str | None = None
    checked_at: str | None = None

    @property
    def age_seconds(self) -> float | None:
        """Time since the server last confirmed (or sent) this copy."""
        if self.checked_at is None:
            return None
        return (datetime.now(UTC) - datetime.fromisoformat(self.checked_at)).total_seconds()


@dataclass
class PullResult:
    copy: CachedCopy
    outcome: str  # cached (fresh enough), unchanged (304), downloaded, stale (server unreachable)

    @property
    def path(self) -> Path:
        return Path(self.copy.path)


def cache_paths(url: str, cache_dir: Path | None) -> tuple[Path, Path, Path]:
    """The index copy, its JSON sidecar and its lock file for ``url``."""
    folder = (cache_dir or default_cache_dir()) / "indexes"
    name = hashlib.sha256(url.encode()).hexdigest()[:32]
    return folder / f"{name}.duckdb", folder / f"{name}.json", folder / f"{name}.lock"


def cached_copy(url: str, cache_dir: Path | None) -> CachedCopy | None:
    """The sidecar of ``url``'s copy, if both the copy and its sidecar are there."""
    path, sidecar, _ = cache_paths(url, cache_dir)
    if not (path.is_file() and sidecar.is_file()):
        return None
    try:
        return CachedCopy(**json.loads(sidecar.read_text()))
    except (ValueError, TypeError):
        return None  # a sidecar from elsewhere or half-written: the copy is fetched again


def local_path(url: str, cache_dir: Path | None, max_age: float = DEFAULT_MAX_AGE) -> Path:
    """A validated local copy of the index at ``url``, fetched or refreshed when needed."""
    return pull(url, cache_dir, max_age).path


def pull(url: str, cache_dir: Path | None, max_age: float = DEFAULT_MAX_AGE) -> PullResult:
    """Fetch ``url`` into the cache, or revalidate the cached copy if older than ``max_age``."""
    copy = cached_copy(url, cache_dir)
    if copy is not None and _fresh(copy, max_age):
        return PullResult(copy, "cached")
    path, sidecar, lock = cache_paths(url, cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    import filelock  # imported late, as httpx is in _refresh

    with filelock.FileLock(lock, timeout=LOCK_TIMEOUT):
        copy = cached_copy(url, cache_dir)  # another process may have refreshed it meanwhile
        if copy is not None and _fresh(copy, max_age):
            return PullResult(copy, "cached")
        try:
            copy, outcome = _refresh(url, copy, path)
        except RemoteIndexError as error:
            if copy is None:
                raise RemoteIndexError(f"{url}: {error}, and there is no cached copy") from None
            log.warning(
                "%s: using the cached copy checked %s ago (%s)",
                url,
                describe_age(copy.age_seconds),
                error,
            )
            return PullResult(copy, "stale")
        _write_atomically(sidecar, json.dumps(asdict(copy), indent=2).encode())
        return PullResult(copy, outcome)


def _fresh(copy: CachedCopy, max_age: float) -> bool:
    age = copy.age_seconds
    return age is not None and age < max_age


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _refresh(url: str, copy: CachedCopy | None, path: Path) -> tuple[CachedCopy, str]:
    """Ask the server for ``url`` (conditionally, when there is a copy); download and validate
    a changed index. Any failure is a RemoteIndexError, and leaves the copy as it was."""
    import httpx  # imported here: a search of a local file need not pay for its imports

    address, _, fragment = url.partition("#")
    headers = {}
    if copy is not None and copy.etag:
        headers["If-None-Match"] = copy.etag
    if copy is not None and copy.last_modified:
        headers["If-Modified-Since"] = copy.last_modified
    try:
        with httpx.stream(
            "GET",
            address,
            headers=headers,
            timeout=httpx.Timeout(HTTP_TIMEOUT, connect=CONNECT_TIMEOUT),
            follow_redirects=True,
        ) as response:
            if response.status_code == 304 and copy is not None:
                copy.checked_at = _now()
                return copy, "unchanged"
            if response.status_code != 200:
                raise RemoteIndexError(f"the server answered HTTP {response.status_code}")
            # Beside the copy, so that the rename is atomic.
            partial = _temporary_file(path.parent, ".download-", response.iter_bytes(1 << 20))
    except httpx.HTTPError as error:
        raise RemoteIndexError(f"cannot reach it: {first_line(error)}") from None
    try:
        _check_digest(partial, fragment)
        validate(partial)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    now = _now()
    fetched = CachedCopy(
        url=url,
        path=str(path),
        etag=response.headers.get("ETag"),
        last_modified=response.headers.get("Last-Modified"),
        downloaded_at=now,
        checked_at=now,
    )
    return fetched, "downloaded"


def _temporary_file(folder: Path, prefix: str, blocks: Iterable[bytes]) -> Path:
    """A new file in ``folder`` holding ``blocks``; removed again if writing fails."""
    with tempfile.NamedTemporaryFile(dir=folder, prefix=prefix, delete=False) as handle:
        written = Path(handle.name)
        try:
            for block in blocks:
                handle.write(block)
        except BaseException:
            written.unlink(missing_ok=True)
            raise
    return written


def _check_digest(path: Path, fragment: str) -> None:
    if not fragment.startswith("sha256="):
        return
    expected = fragment.removeprefix("sha256=").lower()
    with path.open("rb") as handle:
        actual = hashlib.file_digest(handle, "sha256").hexdigest()
    if actual != expected:
        raise RemoteIndexError(f"the download's sha256 is {actual}, not {expected} as the URL says")


def validate(path: Path) -> None:
    """Refuse a file that is not a whole duckdb-vectors index: DuckDB checks each block only
    when it reads it, so a file cut short can open and count, then fail mid-search; every
    column of every table is read here, once."""
    try:
        connection = connect(path, read_only=True)
    except NotAnIndexError as error:
        raise RemoteIndexError(f"the download is not an index ({error})") from None
    try:
        check_readable(connection)
        if read_manifest(connection) is None:
            raise NotAnIndexError("it holds no manifest")
        _read_every_column(connection)
    except (NotAnIndexError, duckdb.Error) as error:
        raise RemoteIndexError(f"the download is not a whole index ({first_line(error)})") from None
    finally:
        connection.close()


def _read_every_column(connection: duckdb.DuckDBPyConnection) -> None:
    columns: dict[str, list[str]] = {}
    for table, column in connection.execute(
        "SELECT table_name, column_name FROM duckdb_columns()"
        " WHERE database_name = current_database() AND schema_name = 'main'"
    ).fetchall():
        columns.setdefault(table, []).append(column)
    for table, names in columns.items():
        # hash() reads every value (count() could be answered from validity masks alone).
        folded = ", ".join(f'bit_xor(hash("{name}"))' for name in names)
        connection.execute(f'SELECT {folded} FROM "{table}"').fetchall()


def _write_atomically(path: Path, content: bytes) -> None:
    written = _temporary_file(path.parent, ".sidecar-", [content])
    try:
        os.replace(written, path)
    finally:
        written.unlink(missing_ok=True)
