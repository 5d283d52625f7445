"""A git repository at one ref, named as pip names one:
``git+https://HOST/ORG/REPO[@REF][#subdirectory=PATH]`` (also ``git+ssh://``, ``git+http://``
and ``git+file://``). REF is a branch, a tag or a full commit id; by default the remote's
default branch. Document ids are paths relative to the subdirectory.

It is read without a checkout. A bare repository in a temporary folder fetches the one commit
and its trees but no file contents (``git fetch --depth 1 --filter=blob:none``); ``git
ls-tree`` of the subdirectory gives each file's blob id, recorded as its validators
(``{"blob": ID}``); ``read`` then fetches, in one request, only the blobs whose id differs from
the recorded one, and ``git cat-file --batch`` streams them. So a refresh with no new commit
downloads the commit and its trees, and one after a commit that changed one file, that file
too; nothing outside the subdirectory is downloaded. A server that ignores filters (a
``git+file://`` repository, an old server) sends every file of the commit at once instead.

Why the git CLI rather than a pure-Python client (dulwich): on the DuckDB docs (425 files,
4.3 MB, next to a 20 MB file outside the subdirectory) served by ``git http-backend`` on
loopback, listing and reading the subdirectory took 0.25 s with git 2.39 and 0.55 s with
dulwich 1.2 (both left the 20 MB file on the server). git needs no new dependency, speaks every
transport as the machine is set up for it (ssh with the user's keys and agent, HTTP proxies,
the system's certificates), and is only needed where a repository is fetched: an image that
serves an index carries neither git nor a git library (``bake`` installs git in its index
stage alone).

git runs with no prompt (``GIT_TERMINAL_PROMPT=0``, ssh in batch mode), with neither the
user's nor the system's git configuration, and in the C locale, since its messages are matched
to say what went wrong. Credentials in the URL (``https://USER:TOKEN@HOST/...``) reach git
through a credential helper that reads them from git's environment: never a command line, a
file, the index, the manifest, a label, a log or an error message.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO
from urllib.parse import parse_qs, quote, unquote, urlsplit, urlunsplit

from ..selection import IGNORE_FILES, FileSelection
from . import (
    Entry,
    Fetched,
    InvalidSourceError,
    Problem,
    Source,
    SourceOptions,
    SourceRecord,
    Validators,
)
from .folder import too_large

SCHEMES = ("git+https://", "git+http://", "git+ssh://", "git+file://")
_SYMLINK = "120000"
_MAX_LINK_HOPS = 40
# Answers git's "get" with the URL's credentials, taken from the environment git runs in.
_CREDENTIAL_HELPER = (
    '!f() { test "$1" = get || exit 0;'
    ' printf "username=%s\\npassword=%s\\n"'
    ' "$DUCKDB_VECTORS_GIT_USERNAME" "$DUCKDB_VECTORS_GIT_PASSWORD"; }; f'
)
# What git says (lowercased, C locale) -> what went wrong, and what to do.
_FAILURES = (
    (
        ("could not read username", "could not read password", "terminal prompts disabled"),
        "the server asks for credentials: put them in the URL"
        " (git+https://USER:TOKEN@HOST/...), or use git+ssh:// with a key",
    ),
    (
        (
            "authentication failed",
            "permission denied",
            "host key verification failed",
            "returned error: 403",
        ),
        "the server refused the credentials: check the user name and token (or the ssh key)",
    ),
    (
        ("does not appear to be a git repository", "not found"),
        "no git repository there: check the URL (a private one needs credentials:"
        " git+https://USER:TOKEN@HOST/...)",
    ),
    (
        (
            "could not resolve host",
            "failed to connect",
            "connection refused",
            "connection timed out",
            "network is unreachable",
            "operation timed out",
        ),
        "cannot reach the host: check its name and the network",
    ),
    (
        ("not our ref", "unadvertised object"),
        "the server does not let a commit be fetched by its id: name a branch or a tag",
    ),
)


@dataclass(frozen=True)
class GitUrl:
    """A git SOURCE taken apart. ``remote`` and ``shown`` carry no credentials."""

    remote: str  # what git fetches from
    shown: str  # the SOURCE as given
    host: str
    path: str  # the repository's path on the host
    ref: str | None
    subdirectory: str  # "" for the repository's root
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, location: str) -> GitUrl:
        parts = urlsplit(location.removeprefix("git+"))
        userinfo, _, address = parts.netloc.rpartition("@")
        username, _, password = userinfo.partition(":")
        # An ssh user (git@) says who to log in as, not a secret; http's are credentials.
        netloc = f"{username}@{address}" if parts.scheme == "ssh" and username else address
        path, ref = parts.path, None
        if "@" in path:
            path, _, ref = path.rpartition("@")
        fragment = parts.fragment
        shown = urlunsplit((parts.scheme, netloc, parts.path, parts.query, fragment))
        shown = "git+" + shown
        if not path.strip("/"):
            raise InvalidSourceError(f"{shown} names no repository: git+https://HOST/ORG/REPO")
        if ref is not None and (not ref or ref.startswith("-") or not ref.isprintable()):
            raise InvalidSourceError(
                f"{shown}: @{ref} is not a branch, tag or commit; name one after the @"
            )
        credentials = parts.scheme in ("http", "https") and bool(userinfo)
        return cls(
            remote=urlunsplit((parts.scheme, netloc, path, parts.query, "")),
            shown=shown,
            host=(parts.hostname or "").lower(),
            path=path,
            ref=ref,
            subdirectory=_subdirectory(shown, fragment),
            username=unquote(username) if credentials else None,
            password=unquote(password) if credentials else None,
        )

    def blob_url(self, commit: str, path: str) -> str | None:
        """Where the forge shows ``path`` (relative to the repository) at ``commit``: GitHub
        and GitLab; None for other hosts."""
        repository = self.path.strip("/").removesuffix(".git")
        if self.host in ("github.com", "www.github.com"):
            return f"https://github.com/{repository}/blob/{commit}/{quote(path)}"
        if self.host == "gitlab.com" or self.host.startswith("gitlab."):
            return f"https://{self.host}/{repository}/-/blob/{commit}/{quote(path)}"
        return None


def _subdirectory(shown: str, fragment: str) -> str:
    fields = parse_qs(fragment, keep_blank_values=True)
    unknown = set(fields) - {"subdirectory", "egg"}  # pip's egg= names the package: ignored
    if unknown:
        raise InvalidSourceError(
            f"{shown}: unknown #{', #'.join(sorted(unknown))}; the fragment takes"
            " #subdirectory=PATH"
        )
    folder = (fields.get("subdirectory") or [""])[-1].strip("/")
    if any(part in ("", ".", "..") for part in folder.split("/")) and folder:
        raise InvalidSourceError(
            f"{shown}: #subdirectory={folder} must be a folder path inside the repository,"
            " e.g. #subdirectory=docs"
        )
    return folder


@dataclass(frozen=True)
class _Item:
    """A ``git ls-tree`` record: a path relative to the subdirectory and its object."""

    path: str
    mode: str
    type: str
    oid: str


class GitSource(Source):
    kind = "git"

    def __init__(self, location: str, options: SourceOptions) -> None:
        self.url = GitUrl.parse(location)
        super().__init__(self.url.shown, options)  # its location never holds credentials
        self.commit: str | None = None
        self._folder: Path | None = None
        self._blobs: dict[str, str] = {}  # document id -> the blob it reads
        self._reader: subprocess.Popen[bytes] | None = None

    @classmethod
    def matches(cls, location: str) -> bool:
        return location.startswith(SCHEMES)

    def list(self, previous: Mapping[str, Validators]) -> list[Entry]:
        self._listed_at = datetime.now(UTC)
        try:
            self._fetch_commit()
            items = self._tree()
            return self._entries(items)
        except BaseException:
            self.close()  # nothing half-fetched is left behind
            raise

    def read(
        self, entries: Sequence[Entry], previous: Mapping[str, Validators]
    ) -> Iterator[Fetched]:
        fresh = []
        for entry in entries:
            validators = {"blob": self._blobs[entry.source]}
            if previous.get(entry.source) == validators:
                yield Fetched(entry.source, unchanged=True, validators=validators)
            else:
                fresh.append(entry.source)
        self._fetch_blobs({self._blobs[source] for source in fresh})
        yield from self._read_blobs(fresh)

    def record(self) -> SourceRecord:
        return SourceRecord(
            kind=self.kind, location=self.location, commit=self.commit, fetched_at=self._listed_at
        )

    def close(self) -> None:
        self._stop_reader()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    # --- listing ------------------------------------------------------------------------

    def _fetch_commit(self) -> None:
        """The commit REF names, with its trees and no file contents."""
        self._folder = Path(tempfile.mkdtemp(prefix="duckdb-vectors-git-"))
        self._git("init", "--quiet", "--bare", "--template=", ".")
        self._git("remote", "add", "origin", self.url.remote)
        self._git(
            "fetch",
            "--quiet",
            "--depth=1",
            "--filter=blob:none",
            "--no-tags",
            "--recurse-submodules=no",
            "origin",
            self.url.ref or "HEAD",
        )
        self.commit = self._git("rev-parse", "--verify", "FETCH_HEAD^{commit}").decode().strip()

    def _tree(self) -> dict[str, _Item]:
        """Every entry below the subdirectory, by path relative to it."""
        tree = f"{self.commit}^{{tree}}"
        folder = self.url.subdirectory
        if folder:
            # The entry as its parent tree lists it: its type, without reading the object.
            found = _items(self._git("ls-tree", "-z", self.commit or "", "--", folder))
            if not found or found[0].type != "tree":
                at = f"@{self.url.ref}" if self.url.ref else "the default branch"
                what = "is not a folder" if found else "does not exist"
                raise InvalidSourceError(
                    f"{self.location}: {folder} {what} at {at} ({(self.commit or '')[:12]});"
                    " check #subdirectory="
                )
            tree = found[0].oid
        return {item.path: item for item in _items(self._git("ls-tree", "-r", "-z", tree))}

    def _entries(self, items: dict[str, _Item]) -> list[Entry]:
        links = {path: item.oid for path, item in items.items() if item.mode == _SYMLINK}
        ignores = {
            name: items[name].oid
            for name in IGNORE_FILES
            if name in items and items[name].type == "blob" and items[name].mode != _SYMLINK
        }
        small = self._contents(set(links.values()) | set(ignores.values()))
        selection = FileSelection.with_ignore_files(
            [small[oid].decode("utf-8", "replace") for oid in ignores.values()],
            self.options.include,
            self.options.exclude,
        )
        targets = {path: small[oid].decode("utf-8", "replace") for path, oid in links.items()}
        folders = {
            path.rsplit("/", depth)[0] for path in items for depth in range(1, path.count("/") + 1)
        }
        entries = []
        for path, item in sorted(items.items()):
            if not self._selected(path, selection):
                continue
            if item.type == "commit":
                problem = Problem("a git submodule (not fetched)", skipped=True, keep=False)
                entries.append(Entry(path, problem))
                continue
            target, refused = _follow(path, items, targets, folders)
            if refused is not None:
                entries.append(Entry(path, Problem(refused, skipped=True, keep=False)))
            elif target is not None:  # None: a link to a folder, whose files are listed anyway
                self._blobs[path] = items[target].oid
                entries.append(Entry(path))
        return entries

    def _selected(self, path: str, selection: FileSelection) -> bool:
        """As a folder's walk selects: hidden names, recursion, the selection's folders."""
        parts = path.split("/")
        if len(parts) > 1 and not self.options.recursive:
            return False
        if not self.options.include_hidden and any(part.startswith(".") for part in parts):
            return False
        folders = ("/".join(parts[:depth]) for depth in range(1, len(parts)))
        return all(selection.enters(folder) for folder in folders) and selection.selects(path)

    # --- reading ------------------------------------------------------------------------

    def _fetch_blobs(self, oids: set[str]) -> None:
        """The blobs to read, in one request (a server that ignored the filter sent them all
        with the commit: git then asks for nothing)."""
        if oids:
            self._git(
                "-c",
                "fetch.negotiationAlgorithm=noop",
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                "--recurse-submodules=no",
                "--filter=blob:none",
                "--stdin",
                "origin",
                stdin="\n".join(sorted(oids)) + "\n",
            )

    def _contents(self, oids: set[str]) -> dict[str, bytes]:
        """Small blobs (link targets, ignore files), fetched and read whole."""
        self._fetch_blobs(oids)
        ordered = sorted(oids)
        return {oid: blob.read() for oid, blob in zip(ordered, self._cat(ordered), strict=True)}

    def _read_blobs(self, sources: list[str]) -> Iterator[Fetched]:
        limit = self.options.max_file_bytes
        blobs = self._cat([self._blobs[source] for source in sources])
        for source, blob in zip(sources, blobs, strict=True):
            validators = {"blob": self._blobs[source]}
            if blob.size > limit:
                blob.skip()
                problem = Problem(too_large(blob.size, limit), skipped=True)
                yield Fetched(source, validators=validators, problem=problem)
                continue
            url = self.url.blob_url(self.commit or "", self._repository_path(source))
            yield Fetched(source, data=blob.read(), url=url, validators=validators)

    def _cat(self, oids: list[str]) -> Iterator[_Blob]:
        """Each blob, from one ``git cat-file --batch`` asked for one at a time (it answers
        each at once); each must be read or skipped before the next."""
        self._reader = self._popen("cat-file", "--batch")
        stdin, stdout = self._reader.stdin, self._reader.stdout
        assert stdin is not None and stdout is not None
        try:
            for oid in oids:
                stdin.write(oid.encode() + b"\n")
                stdin.flush()
                yield _Blob.start(stdout, oid)
        finally:
            self._stop_reader()

    def _stop_reader(self) -> None:
        if self._reader is not None:
            self._reader.kill()
            self._reader.communicate()
            self._reader = None

    def _repository_path(self, source: str) -> str:
        folder = self.url.subdirectory
        return f"{folder}/{source}" if folder else source

    # --- running git --------------------------------------------------------------------

    def _git(self, *arguments: str, stdin: str | None = None) -> bytes:
        try:
            done = subprocess.run(
                self._command(arguments),
                input=None if stdin is None else stdin.encode(),
                capture_output=True,
                env=self._environment(),
                check=False,
            )
        except FileNotFoundError:
            raise self._git_missing() from None
        if done.returncode != 0:
            raise InvalidSourceError(self._failure(done.stderr.decode(errors="replace")))
        return done.stdout

    def _popen(self, *arguments: str) -> subprocess.Popen[bytes]:
        try:
            return subprocess.Popen(
                self._command(arguments),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                # git 2.44+: a blob missing from what was fetched is an error, not a request
                env=self._environment() | {"GIT_NO_LAZY_FETCH": "1"},
            )
        except FileNotFoundError:
            raise self._git_missing() from None

    @property
    def _seconds(self) -> int:
        """The request timeout, in the whole seconds git and ssh take."""
        return max(1, round(self.options.timeout))

    def _command(self, arguments: Sequence[str]) -> list[str]:
        settings = [
            "protocol.version=2",  # fetching blobs by id needs v2 on most servers
            "http.lowSpeedLimit=1",  # a transfer stalled for the request timeout fails
            f"http.lowSpeedTime={self._seconds}",
        ]
        if self.url.username is not None:
            settings.append(f"credential.helper={_CREDENTIAL_HELPER}")
        configured = [word for setting in settings for word in ("-c", setting)]
        return ["git", "-C", str(self._folder), *configured, *arguments]

    def _environment(self) -> dict[str, str]:
        """The caller's environment less git's own variables (a GIT_DIR would redirect
        every command), with no prompt, no configuration files and git's messages in English."""
        environment = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        environment |= {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "",
            "SSH_ASKPASS": "",
            "GIT_SSH_COMMAND": f"ssh -o BatchMode=yes -o ConnectTimeout={self._seconds}",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "LC_ALL": "C",
            "LANGUAGE": "C",
        }
        if self.url.username is not None:
            environment["DUCKDB_VECTORS_GIT_USERNAME"] = self.url.username
            environment["DUCKDB_VECTORS_GIT_PASSWORD"] = self.url.password or ""
        return environment

    def _git_missing(self) -> InvalidSourceError:
        return InvalidSourceError(
            f"{self.location}: git is not installed; install git (https://git-scm.com) to"
            " index a repository"
        )

    def _failure(self, stderr: str) -> str:
        """One line: the URL (without credentials), what went wrong and what to do."""
        said = self._without_credentials(stderr).lower()
        if "couldn't find remote ref" in said:
            if self.url.ref is None:
                return f"{self.location}: the repository has no commits on its default branch"
            return (
                f"{self.location}: no branch, tag or commit {self.url.ref!r} in the repository;"
                " check the @REF (a commit needs its full id)"
            )
        for phrases, meaning in _FAILURES:
            if any(phrase in said for phrase in phrases):
                return f"{self.location}: {meaning}"
        lines = [line for line in self._without_credentials(stderr).splitlines() if line.strip()]
        last = lines[-1].removeprefix("fatal: ").removeprefix("error: ") if lines else "failed"
        return f"{self.location}: git failed: {last}"

    def _without_credentials(self, text: str) -> str:
        for secret in (self.url.password, self.url.username):
            if secret:
                text = text.replace(secret, "***")
        return text


@dataclass(frozen=True)
class _Blob:
    """A blob ``git cat-file --batch`` is sending: after its header, its bytes and a newline."""

    stream: IO[bytes]
    size: int

    @classmethod
    def start(cls, stream: IO[bytes], oid: str) -> _Blob:
        words = stream.readline().split()  # <oid> blob <size>, or <oid> missing
        if len(words) != 3 or words[1] != b"blob":
            raise InvalidSourceError(f"blob {oid} is missing from the fetched repository")
        return cls(stream, int(words[2]))

    def read(self) -> bytes:
        data = self.stream.read(self.size + 1)[: self.size]
        if len(data) != self.size:
            raise InvalidSourceError("git cat-file stopped in the middle of a file")
        return data

    def skip(self) -> None:
        left = self.size + 1
        while left > 0 and (part := self.stream.read(min(left, 1 << 20))):
            left -= len(part)


def _items(listing: bytes) -> list[_Item]:
    """``git ls-tree -z`` records: ``<mode> <type> <oid>\\t<path>``."""
    items = []
    for record in listing.split(b"\0"):
        if record:
            meta, _, path = record.partition(b"\t")
            mode, kind, oid = meta.decode().split()
            items.append(_Item(path.decode("utf-8", "replace"), mode, kind, oid))
    return items


def _follow(
    path: str, items: Mapping[str, _Item], targets: Mapping[str, str], folders: set[str]
) -> tuple[str | None, str | None]:
    """What a path reads once its symlinks are followed inside the tree: ``(file, None)``,
    ``(None, None)`` for a folder, or ``(None, why it is refused)``."""
    for _ in range(_MAX_LINK_HOPS):
        if path not in targets:
            return (path, None) if items[path].type == "blob" else (None, "symlink to a submodule")
        target = targets[path]
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        if target.startswith("/") or joined == ".." or joined.startswith("../"):
            return None, "symlink points outside the indexed tree (not followed)"
        if joined == "." or joined in folders:
            return None, None
        if joined not in items:
            return None, "broken symlink"
        path = joined
    return None, "symlink loop"
