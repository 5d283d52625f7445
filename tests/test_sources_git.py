"""A git repository as a SOURCE: real repositories made here, reached by ``git+file://`` and
over HTTP through ``git http-backend`` on loopback (one server requires Basic auth, as a
private repository does). Nothing is mocked: the run is the product's, git is the machine's.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DEFAULT_BACKEND, STATIC_MODEL, run_cli
from git_server import commit_files, git, publish, push, serving

from duckdb_vectors import InvalidSourceError, UrlRule, VectorStore, index_source
from duckdb_vectors.citations import url_of
from duckdb_vectors.sources import SourceOptions, open_source
from duckdb_vectors.sources.git import GitSource, GitUrl

TOKEN = "s3cr3t-t0ken-4242"
PAGES = {
    "README.md": "# The project\n\nThe repository's front page, outside the docs.\n",
    "docs/retries.md": "# Retries\n\nFailed requests are retried three times, with backoff.\n",
    "docs/limits.md": "# Limits\n\nAt most 100 requests per minute for each key.\n",
    "docs/guide/install.md": "# Install\n\nRun it, then read [retries](../retries.md).\n",
    "docs/drafts/wip.md": "# Draft\n\nAn unfinished page about quotas.\n",
    "docs/.hidden.md": "# Hidden\n\nA dot-file is left out by default.\n",
    "docs/.duckdb-vectors-ignore": "drafts/\n",
}
INDEXED = {"retries.md", "limits.md", "guide/install.md", "backoff.md"}
BIG = 2_000_000  # a file outside docs/ that a filtered fetch never downloads
PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)


def no_checkouts() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("duckdb-vectors-git-*"))


@pytest.fixture(autouse=True)
def own_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Temporary repositories made in this test (in process or by a CLI it starts) go in a
    folder of its own, so that other tests running beside it cannot make it look unclean."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))


@pytest.fixture
def repository(tmp_path: Path) -> Iterator[Path]:
    """A repository with docs/ (a link inside it, one pointing outside), a tag v1.0 on the
    first commit and a branch `next` one commit ahead of main."""
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "--quiet", "--initial-branch=main")
    (work / "assets").mkdir()
    (work / "assets" / "big.bin").write_bytes(os.urandom(BIG))
    (work / "docs").mkdir()
    (work / "docs" / "diagram.png").write_bytes(PNG)  # listed every run, never indexed
    commit_files(work, PAGES, "docs")
    (work / "docs" / "backoff.md").symlink_to("retries.md")
    (work / "docs" / "escape.md").symlink_to("../README.md")
    commit_files(work, {}, "links")
    git(work, "tag", "--annotate", "v1.0", "--message", "the first release")
    git(work, "checkout", "--quiet", "-b", "next")
    commit_files(work, {"docs/limits.md": "# Limits\n\nAt most 50 requests a minute.\n"}, "next")
    git(work, "checkout", "--quiet", "main")
    before = no_checkouts()
    yield work
    assert no_checkouts() == before  # every run removed its temporary repository


@pytest.fixture
def served(repository: Path, tmp_path: Path) -> Iterator[str]:
    """The repository over HTTP; its URL."""
    root = tmp_path / "served"
    root.mkdir()
    publish(repository, root, "repo.git")
    with serving(root) as server:
        yield f"{server.url}/repo.git"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[VectorStore]:
    with VectorStore(tmp_path / "git.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        yield store


def sources_of(store: VectorStore) -> set[str]:
    return {source for source in store.report().sources}


def test_a_subdirectory_over_http_reads_only_that_folder(
    repository: Path, tmp_path: Path, store: VectorStore
) -> None:
    root = tmp_path / "served"
    root.mkdir()
    publish(repository, root, "repo.git")
    with serving(root) as server:
        summary = index_source(store, f"git+{server.url}/repo.git#subdirectory=docs")
        sent = server.bytes_sent
    assert summary.kind == "git" and sources_of(store) == INDEXED
    assert sent < BIG / 4  # the trees and docs/'s files, not the big file beside them
    skipped = {problem.source: problem.reason for problem in summary.skipped}
    assert skipped["escape.md"] == "symlink points outside the indexed tree (not followed)"
    assert set(skipped) == {"escape.md", "diagram.png"}
    (linked,) = store.document("backoff.md")  # a link inside the tree reads its target
    assert "retried three times" in linked.text
    (record,) = store.manifest.sources
    assert record.kind == "git" and record.commit == git(repository, "rev-parse", "main")
    assert record.location == f"git+{server.url}/repo.git#subdirectory=docs"
    assert (record.documents, record.read, record.skipped) == (4, 5, 2)
    assert url_of(store.query("how often is a failed request retried?", top_k=1)[0].chunk) is None


@pytest.mark.parametrize(
    ("ref", "limit"), [("v1.0", "100 requests"), ("next", "50 requests"), ("", "100 requests")]
)
def test_a_tag_a_branch_or_the_default_branch(
    repository: Path, store: VectorStore, ref: str, limit: str
) -> None:
    at = f"@{ref}" if ref else ""
    index_source(store, f"git+file://{repository}{at}#subdirectory=docs")
    (limits,) = store.document("limits.md")
    assert limit in limits.text
    expected = git(repository, "rev-parse", f"{ref or 'main'}^{{commit}}")
    assert store.manifest.sources[0].commit == expected


def test_include_and_exclude_apply_to_paths_below_the_subdirectory(
    repository: Path, store: VectorStore
) -> None:
    options = SourceOptions(include=["guide/*.md", "drafts/"], exclude=["drafts/wip.md"])
    index_source(store, open_source(f"git+file://{repository}#subdirectory=docs", options))
    assert sources_of(store) == {"guide/install.md"}
    hidden = SourceOptions(include_hidden=True, recursive=False)
    index_source(store, open_source(f"git+file://{repository}#subdirectory=docs", hidden))
    top = {"retries.md", "limits.md", "backoff.md", ".hidden.md", ".duckdb-vectors-ignore"}
    assert sources_of(store) == top


def test_a_refresh_reads_only_what_a_commit_changed(
    repository: Path, served: str, store: VectorStore
) -> None:
    location = f"git+{served}#subdirectory=docs"
    first = index_source(store, location)
    assert (first.files_read, first.files_new) == (5, 4)  # the image is read, and skipped

    # Every page the index holds is confirmed by its blob id; the image, stored nowhere since
    # nothing of it is indexed, is the one file read again (and skipped again).
    again = index_source(store, location)
    assert (again.files_read, again.files_unchanged, again.chunks_embedded) == (1, 4, 0)
    assert sorted(problem.source for problem in again.skipped) == ["diagram.png", "escape.md"]

    changed = {"docs/limits.md": "# Limits\n\nAt most 10 requests per minute for each key.\n"}
    commit = commit_files(repository, changed, "lower the limit")
    push(repository)
    third = index_source(store, location)
    assert (third.files_read, third.files_changed, third.files_unchanged) == (2, 1, 3)
    assert third.chunks_embedded == 1
    assert store.manifest.sources[0].commit == commit
    (limits,) = store.document("limits.md")
    assert "10 requests" in limits.text

    commit_files(repository, {"docs/limits.md": None}, "no more limits")
    push(repository)
    fourth = index_source(store, location)
    assert fourth.chunks_pruned == 1 and "limits.md" not in sources_of(store)


def test_a_private_repository_needs_credentials_that_go_nowhere(
    repository: Path, tmp_path: Path
) -> None:
    root = tmp_path / "private"
    root.mkdir()
    publish(repository, root, "repo.git")
    db = tmp_path / "private.duckdb"
    with serving(root, credentials=f"reader:{TOKEN}") as server:
        bare = f"git+{server.url}/repo.git#subdirectory=docs"
        host = server.url.removeprefix("http://")
        refused = run_cli("index", bare, "--db", str(db))
        assert refused.exit_code == 1 and refused.stderr.count("\n") == 1
        assert refused.stderr == (
            f"Error: {bare}: the server asks for credentials: put them in the URL"
            " (git+https://USER:TOKEN@HOST/...), or use git+ssh:// with a key\n"
        )
        wrong = run_cli("index", f"git+http://reader:nope@{host}/repo.git", "--db", str(db))
        assert "the server refused the credentials" in wrong.stderr
        assert not db.exists()

        with_token = f"git+http://reader:{TOKEN}@{host}/repo.git#subdirectory=docs"
        result = run_cli("index", with_token, "--db", str(db), "--json")
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["folder"] == bare
        report = run_cli("report", "--db", str(db), "--json")
        shown = run_cli("report", "--db", str(db)).stdout
    (record,) = json.loads(report.stdout)["manifest"]["sources"]
    assert record["location"] == bare
    assert f"origin      {bare} (git, commit {record['commit'][:12]}, fetched" in shown
    assert "4 documents, 5 read, 0 unchanged, 2 skipped, 0 failed" in shown
    for text in (result.stdout, result.stderr, report.stdout, shown):
        assert TOKEN not in text
    assert TOKEN.encode() not in db.read_bytes()


def test_a_token_alone_goes_as_the_user_name(
    repository: Path, tmp_path: Path, store: VectorStore
) -> None:
    """``https://TOKEN@host/...``, as GitHub takes a token: the user name, no password."""
    root = tmp_path / "private"
    root.mkdir()
    publish(repository, root, "repo.git")
    with serving(root, credentials=f"{TOKEN}:") as server:
        host = server.url.removeprefix("http://")
        summary = index_source(store, f"git+http://{TOKEN}@{host}/repo.git#subdirectory=docs")
    assert summary.folder == f"git+{server.url}/repo.git#subdirectory=docs"
    assert sources_of(store) == INDEXED


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("git+file://{repository}-missing", "no git repository there: check the URL"),
        ("git+{served}-missing", "no git repository there: check the URL"),
        ("git+file://{repository}@v9.9", "no branch, tag or commit 'v9.9' in the repository"),
        ("git+{served}#subdirectory=manual", "manual does not exist at the default branch"),
        ("git+{served}@v1.0#subdirectory=README.md", "README.md is not a folder at @v1.0"),
        ("git+http://127.0.0.1:9/repo.git", "cannot reach the host"),
        ("git+file://{repository}#subdir=docs", "unknown #subdir; the fragment takes"),
    ],
    ids=["no-repository", "no-repository-http", "no-ref", "no-folder", "a-file", "down", "typo"],
)
def test_what_cannot_be_read_is_one_line_naming_the_url(
    repository: Path, served: str, tmp_path: Path, location: str, message: str
) -> None:
    location = location.format(repository=repository, served=served)
    with pytest.raises(InvalidSourceError, match=message) as raised:
        source = open_source(location)
        try:
            source.list({})
        finally:
            source.close()
    assert str(raised.value).startswith(location) and "\n" not in str(raised.value)
    result = run_cli("index", location, "--db", str(tmp_path / "x.duckdb"))
    assert result.exit_code == 1 and result.stderr == f"Error: {raised.value}\n"
    assert not (tmp_path / "x.duckdb").exists()


def test_without_git_installed_it_says_so(repository: Path, tmp_path: Path) -> None:
    location = f"git+file://{repository}"
    result = run_cli("index", location, "--db", str(tmp_path / "x.duckdb"), env={"PATH": ""})
    assert result.stderr == (
        f"Error: {location}: git is not installed; install git (https://git-scm.com) to index"
        " a repository\n"
    )


def test_citations_name_the_file_at_the_commit_unless_a_base_url_is_given(
    repository: Path, store: VectorStore
) -> None:
    index_source(
        store, f"git+file://{repository}#subdirectory=docs", urls=UrlRule("https://d.example/")
    )
    hit = store.query("how many requests per minute for each key?", top_k=1)[0].chunk
    assert url_of(hit) == "https://d.example/limits.html"
    url = GitUrl.parse("git+https://github.com/org/repo.git@v1#subdirectory=docs")
    assert url.blob_url("abc123", "docs/a b.md") == (
        "https://github.com/org/repo/blob/abc123/docs/a%20b.md"
    )
    gitlab = GitUrl.parse("git+ssh://git@gitlab.com/group/sub/repo.git")
    assert gitlab.blob_url("abc123", "guide.md") == (
        "https://gitlab.com/group/sub/repo/-/blob/abc123/guide.md"
    )
    assert GitUrl.parse("git+https://git.example.com/repo").blob_url("abc", "a.md") is None


def test_a_github_source_sends_the_blob_url_of_each_file(repository: Path) -> None:
    """The URL a hit cites is the file's page at the commit read (a forge is not reachable
    here: the source is pointed at a local copy after parsing a github.com URL)."""
    source = GitSource("git+https://github.com/org/repo@main#subdirectory=docs", SourceOptions())
    local = GitUrl.parse(f"git+file://{repository}@main#subdirectory=docs")
    source.url = GitUrl(**{**vars(local), "host": "github.com", "path": "/org/repo"})
    try:
        entries = [entry for entry in source.list({}) if entry.problem is None]
        fetched = {one.source: one for one in source.read(entries, {})}
    finally:
        source.close()
    commit = git(repository, "rev-parse", "main")
    expected = f"https://github.com/org/repo/blob/{commit}/docs/guide/install.md"
    assert fetched["guide/install.md"].url == expected
    assert fetched["guide/install.md"].validators == {
        "blob": git(repository, "rev-parse", "main:docs/guide/install.md")
    }


def test_the_url_is_taken_apart_as_pip_names_it() -> None:
    url = GitUrl.parse(f"git+https://reader:{TOKEN}@example.com/org/repo.git@feature/x#egg=x")
    assert (url.remote, url.ref, url.subdirectory) == (
        "https://example.com/org/repo.git",
        "feature/x",
        "",
    )
    assert url.shown == "git+https://example.com/org/repo.git@feature/x#egg=x"
    assert (url.username, url.password) == ("reader", TOKEN) and TOKEN not in repr(url)
    ssh = GitUrl.parse("git+ssh://git@example.com/org/repo.git#subdirectory=/docs/")
    assert (ssh.remote, ssh.subdirectory, ssh.username) == (
        "ssh://git@example.com/org/repo.git",
        "docs",
        None,
    )
    for bad in ("git+https://example.com/", "git+https://example.com/r@", "git+file:///r@-x"):
        with pytest.raises(InvalidSourceError):
            GitUrl.parse(bad)
