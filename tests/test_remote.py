"""Published indexes (--db URL): fetched from a real HTTP server on 127.0.0.1 into a cache."""

from __future__ import annotations

import email.utils
import hashlib
import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest
from conftest import DEFAULT_BACKEND, INTRO_TEXTS, SCRIPT, STATIC_MODEL, run_cli
from mcp import Client, StdioServerParameters

from duckdb_vectors import ReadOnlyError, VectorStore, remote
from duckdb_vectors.errors import RemoteIndexError


class IndexServer:
    """Serves one folder with ETag and Last-Modified validators; counts what it sends and
    can be told to fail (HTTP 500) or to send each file cut in half."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.mode = "ok"
        self.requests = 0
        self.bodies = 0  # 200 responses: whole files sent
        self.not_modified = 0
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{name}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def do_GET(self) -> None:
                with server._lock:
                    server.requests += 1
                if server.mode == "fail":
                    self.send_error(HTTPStatus.INTERNAL_SERVER_ERROR)
                    return
                path = server.folder / self.path.lstrip("/")
                if not path.is_file():
                    self.send_error(HTTPStatus.NOT_FOUND)
                    return
                content = path.read_bytes()
                etag = f'"{hashlib.sha256(content).hexdigest()[:16]}"'
                if self.headers.get("If-None-Match") == etag:
                    with server._lock:
                        server.not_modified += 1
                    self.send_response(HTTPStatus.NOT_MODIFIED)
                    self.send_header("ETag", etag)
                    self.end_headers()
                    return
                if server.mode == "truncate":
                    content = content[: len(content) // 2]
                self.send_response(HTTPStatus.OK)
                self.send_header("ETag", etag)
                self.send_header(
                    "Last-Modified", email.utils.formatdate(path.stat().st_mtime, usegmt=True)
                )
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)
                with server._lock:
                    server.bodies += 1

        return Handler


def build_index(path: Path, texts: list[str]) -> Path:
    with VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(texts, sources=[f"docs/{i}.md" for i in range(len(texts))])
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two small real indexes: the published one, and a later edition of it."""
    folder = tmp_path_factory.mktemp("built")
    return {
        "first": build_index(folder / "first.duckdb", INTRO_TEXTS),
        "second": build_index(folder / "second.duckdb", INTRO_TEXTS[:3]),
    }


@pytest.fixture
def site(tmp_path: Path, built: dict[str, Path]) -> Iterator[IndexServer]:
    folder = tmp_path / "site"
    folder.mkdir()
    shutil.copy(built["first"], folder / "docs.duckdb")
    server = IndexServer(folder)
    yield server
    server.stop()


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def open_count(url: str, cache: Path, max_age: float | str | None = None) -> int:
    with VectorStore(url, cache_dir=cache, max_age=max_age, model_path=STATIC_MODEL) as store:
        assert store.read_only
        return store.count()


def leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in (cache / "indexes").glob(".*"))


@pytest.mark.slow
def test_first_open_downloads_and_later_opens_reuse_the_copy(
    site: IndexServer, cache: Path
) -> None:
    url = site.url("docs.duckdb")
    with VectorStore(url, cache_dir=cache, model_path=STATIC_MODEL) as store:
        hits = store.query("capital of Greece", top_k=1)
        assert hits[0].chunk.source == "docs/5.md"
        assert store.db_path.parent == cache / "indexes"
        assert store.db_path.read_bytes() == (site.folder / "docs.duckdb").read_bytes()
    assert open_count(url, cache) == len(INTRO_TEXTS)
    assert (site.requests, site.bodies) == (1, 1)  # within max-age: the server is not asked
    assert leftovers(cache) == []


def test_an_old_copy_is_revalidated_and_an_unchanged_index_is_not_downloaded_again(
    site: IndexServer, cache: Path
) -> None:
    url = site.url("docs.duckdb")
    open_count(url, cache)
    checked = remote.cached_copy(url, cache).checked_at
    assert open_count(url, cache, max_age=0) == len(INTRO_TEXTS)
    assert (site.requests, site.bodies, site.not_modified) == (2, 1, 1)
    assert remote.cached_copy(url, cache).checked_at > checked


def test_a_changed_index_replaces_the_old_copy(
    site: IndexServer, cache: Path, built: dict[str, Path]
) -> None:
    url = site.url("docs.duckdb")
    assert open_count(url, cache) == len(INTRO_TEXTS)
    shutil.copy(built["second"], site.folder / "docs.duckdb")
    assert open_count(url, cache, max_age="1h") == len(INTRO_TEXTS)  # not old enough yet
    assert open_count(url, cache, max_age="0s") == 3
    assert site.bodies == 2


@pytest.mark.parametrize("outage", ["server error", "network down"])
def test_an_unreachable_server_falls_back_to_the_cached_copy_with_one_warning(
    site: IndexServer, cache: Path, outage: str
) -> None:
    url = site.url("docs.duckdb")
    assert run_cli("pull", url, env={"DUCKDB_VECTORS_CACHE_DIR": str(cache)}).exit_code == 0
    if outage == "server error":
        site.mode = "fail"
    else:
        site.stop()
    env = {"DUCKDB_VECTORS_CACHE_DIR": str(cache), "DUCKDB_VECTORS_MAX_AGE": "0"}
    result = run_cli("search", "AWS credentials", "--db", url, "--text-only", env=env)
    assert result.exit_code == 0, result.stderr
    assert "1. [" in result.stdout and "docs/2.md" in result.stdout
    warning = result.stderr.strip().splitlines()
    assert len(warning) == 1
    assert warning[0].startswith(f"{url}: using the cached copy checked ")
    assert ("HTTP 500" if outage == "server error" else "cannot reach it") in warning[0]


def test_no_cache_and_no_server_is_one_clear_error(site: IndexServer, cache: Path) -> None:
    url = site.url("docs.duckdb")
    site.stop()
    result = run_cli("report", "--db", url, env={"DUCKDB_VECTORS_CACHE_DIR": str(cache)})
    assert result.exit_code == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {url}: cannot reach it: ")
    assert line.endswith(", and there is no cached copy")


def test_a_truncated_download_never_replaces_the_good_copy(site: IndexServer, cache: Path) -> None:
    url = site.url("docs.duckdb")
    good = remote.local_path(url, cache)
    before = good.read_bytes()
    site.mode = "truncate"
    assert remote.local_path(url, cache, max_age=0) == good
    assert good.read_bytes() == before
    assert open_count(url, cache) == len(INTRO_TEXTS)
    assert leftovers(cache) == []


def test_a_truncated_first_download_is_refused_and_leaves_nothing(
    site: IndexServer, cache: Path
) -> None:
    site.mode = "truncate"
    url = site.url("docs.duckdb")
    with pytest.raises(RemoteIndexError, match=r"not a whole index|not an index"):
        remote.local_path(url, cache)
    assert sorted(p.name for p in (cache / "indexes").iterdir()) == [
        f"{remote.cache_paths(url, cache)[2].name}"  # the lock file alone
    ]


def test_a_file_that_is_no_index_is_refused(site: IndexServer, cache: Path) -> None:
    (site.folder / "page.duckdb").write_text("<html>Not found</html>")
    with pytest.raises(RemoteIndexError, match=r"page\.duckdb: the download is not an index"):
        remote.local_path(site.url("page.duckdb"), cache)


def test_the_url_can_pin_the_content_by_sha256(site: IndexServer, cache: Path) -> None:
    digest = hashlib.sha256((site.folder / "docs.duckdb").read_bytes()).hexdigest()
    wrong = site.url("docs.duckdb") + "#sha256=" + "0" * 64
    result = run_cli("report", "--db", wrong, env={"DUCKDB_VECTORS_CACHE_DIR": str(cache)})
    assert result.exit_code == 1
    assert f"sha256 is {digest}, not {'0' * 64}" in result.stderr
    assert open_count(site.url("docs.duckdb") + f"#sha256={digest}", cache) == len(INTRO_TEXTS)
    assert leftovers(cache) == []


def test_a_url_is_never_opened_read_write(site: IndexServer, cache: Path) -> None:
    with pytest.raises(ReadOnlyError, match="published index: it opens read-only"):
        VectorStore(site.url("docs.duckdb"), cache_dir=cache, read_only=False)
    result = run_cli("index", str(site.folder), "--db", site.url("docs.duckdb"))
    assert result.exit_code == 1
    assert "published index: it opens read-only" in result.stderr


@pytest.mark.slow
def test_two_processes_pulling_at_once_share_one_download(site: IndexServer, cache: Path) -> None:
    url = site.url("docs.duckdb")
    env = {"DUCKDB_VECTORS_CACHE_DIR": str(cache), "PATH": str(Path(SCRIPT).parent)}
    pulls = [
        subprocess.Popen([SCRIPT, "pull", url], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=60)[0].strip() for process in pulls]
    assert [process.returncode for process in pulls] == [0, 0]
    assert outputs[0] == outputs[1] == str(remote.cache_paths(url, cache)[0])
    assert site.bodies == 1  # the second waited for the lock, then got a 304 at most
    remote.validate(Path(outputs[0]))
    assert leftovers(cache) == []


def test_pull_prints_the_copy_and_says_what_it_did(site: IndexServer, cache: Path) -> None:
    url = site.url("docs.duckdb")
    env = {"DUCKDB_VECTORS_CACHE_DIR": str(cache)}
    first = run_cli("pull", url, env=env)
    assert first.stdout.strip() == str(remote.cache_paths(url, cache)[0])
    again = json.loads(run_cli("pull", url, "--json", env=env).stdout)
    assert again["outcome"] == "unchanged"  # pull always asks the server, unless --max-age
    assert again["path"] == first.stdout.strip()
    assert again["url"] == url and again["etag"] and again["last_modified"]
    cached = json.loads(run_cli("pull", url, "--json", "--max-age", "1h", env=env).stdout)
    assert cached["outcome"] == "cached"
    assert site.bodies == 1
    refused = run_cli("pull", "docs.duckdb")
    assert refused.exit_code == 2 and "is not an http(s):// URL" in refused.stderr


def test_report_on_a_url_shows_the_source_the_copy_and_its_age(
    site: IndexServer, cache: Path
) -> None:
    url = site.url("docs.duckdb")
    env = {"DUCKDB_VECTORS_CACHE_DIR": str(cache), "DUCKDB_VECTORS_DB_PATH": url}
    text = run_cli("report", env=env).stdout
    copy = remote.cache_paths(url, cache)[0]
    assert f"index       {copy} (" in text
    assert f"published   {url} (checked 0s ago)" in text
    published = json.loads(run_cli("report", "--json", env=env).stdout)["published"]
    assert (published["url"], published["cache_path"]) == (url, str(copy))
    assert 0 <= published["age_seconds"] < 60


def test_a_bad_max_age_is_a_usage_error(site: IndexServer) -> None:
    result = run_cli("search", "x", "--db", site.url("docs.duckdb"), "--max-age", "soon")
    assert result.exit_code == 2
    assert "'soon' is not a duration" in result.stderr


@pytest.mark.slow
def test_an_mcp_server_serves_a_published_index(site: IndexServer, cache: Path) -> None:
    url = site.url("docs.duckdb")
    environment = {
        "DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL),
        "DUCKDB_VECTORS_CACHE_DIR": str(cache),
        "HF_HUB_OFFLINE": "1",
    }
    parameters = StdioServerParameters(command=SCRIPT, args=["mcp", "--db", url], env=environment)

    async def scenario() -> None:
        async with Client(parameters, mode="legacy", read_timeout_seconds=60) as client:
            found = await client.call_tool("search", {"query": "AWS credentials", "top_k": 1})
            assert found.structured_content["results"][0]["source"] == "docs/2.md"
            report = (await client.call_tool("report", {})).structured_content
            assert report["published"]["url"] == url

    anyio.run(scenario)
    refused = run_cli("mcp", "--db", url, "--read-write", env=environment)
    assert refused.exit_code == 1
    assert refused.stderr.strip() == (
        f"Error: {url} is a published index: it opens read-only, not read-write"
    )
