"""Sites and llms.txt files as sources, read from a real HTTP server on 127.0.0.1.

Each test serves a small documentation site made of files it writes, with ETags,
Last-Modified dates and 304s as a static file server sends them, and reads the server's
request log to see what the source asked for.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import DEFAULT_BACKEND, STATIC_MODEL, run_cli

from duckdb_vectors import InvalidSourceError, VectorStore, index_source
from duckdb_vectors.sources import SourceOptions
from duckdb_vectors.sources.http import USER_AGENT

PROSE = (
    "This paragraph is here so that the page reads as documentation and not as navigation:"
    " it explains, at some length, what the reader needs to know about the topic."
)


def page(title: str, body: str, head: str = "", links: str = "") -> str:
    return (
        f"<html><head><title>{title}</title>{head}</head><body><nav>{links}</nav>"
        f"<main><h1>{title}</h1><p>{body} {PROSE}</p></main></body></html>"
    )


@dataclass
class Served:
    """What the server answers at one path: a file, or a behaviour (``answer``)."""

    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    answer: Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes]] | None = None


@dataclass
class Logged:
    path: str
    status: int
    conditional: bool
    user_agent: str
    authorization: str | None
    header: str | None


class Site:
    """A docs site: ``files`` by path; every request is in ``log``."""

    def __init__(self) -> None:
        self.files: dict[str, Served] = {}
        self.log: list[Logged] = []
        self.stamp = time.time() - 3600
        self.required_auth: str | None = None

    def put(self, path: str, text: str | bytes, content_type: str = "text/html; charset=utf-8"):
        body = text.encode() if isinstance(text, str) else text
        self.files[path] = Served(body, content_type)

    def behave(self, path: str, answer: Callable) -> None:
        self.files[path] = Served(answer=answer)

    def pages(self) -> list[Logged]:
        """The requests for documents (not robots.txt, sitemaps, llms.txt files)."""
        structure = ("/robots.txt", ".xml", ".xml.gz", "llms.txt", "llms-full.txt")
        return [entry for entry in self.log if not entry.path.endswith(structure)]


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body are two writes: without this, each 200 waits for a delayed ACK.
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            status, headers, body = self._answer(path)
            conditional = "If-None-Match" in self.headers or "If-Modified-Since" in self.headers
            site.log.append(
                Logged(
                    self.path,
                    status,
                    conditional,
                    self.headers.get("User-Agent", ""),
                    self.headers.get("Authorization"),
                    self.headers.get("X-Token"),
                )
            )
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if "Content-Length" not in headers and "Connection" not in headers:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            # The client may stop reading (a page over the size limit).
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

        def _answer(self, path: str) -> tuple[int, dict[str, str], bytes]:
            if site.required_auth and self.headers.get("Authorization") != site.required_auth:
                return 401, {}, b"who are you?"
            served = site.files.get(path)
            if served is None:
                return 404, {"Content-Type": "text/plain"}, b"not found"
            if served.answer is not None:
                return served.answer(self)
            etag = '"' + hashlib.sha256(served.body).hexdigest()[:16] + '"'
            modified = formatdate(site.stamp, usegmt=True)
            headers = {"ETag": etag, "Last-Modified": modified, **served.headers}
            if self.headers.get("If-None-Match") == etag:
                return 304, headers, b""
            return 200, {**headers, "Content-Type": served.content_type}, served.body

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client closing its kept-alive connection: nothing to report


@pytest.fixture
def serve() -> Iterator[Callable[[], tuple[Site, str]]]:
    """Start sites on 127.0.0.1; each is shut down when the test ends, passed or not."""
    servers: list[_Server] = []

    def start() -> tuple[Site, str]:
        site = Site()
        server = _Server(("127.0.0.1", 0), _handler(site))
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return site, f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[VectorStore]:
    with VectorStore(tmp_path / "web.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        yield store


def docs_site(site: Site) -> None:
    """The pages every site test starts from, below /docs/."""
    site.put("/docs/", page("Welcome", "Start with the installation guide."))
    site.put("/docs/guide/install.html", page("Install", "Run pip install to install it."))
    site.put("/docs/retries.html", page("Retries", "Failed requests are retried with backoff."))
    site.put(
        "/docs/limits.html", page("Limits", "At most one hundred requests per minute per key.")
    )


def sitemap(base: str, paths: list[str]) -> str:
    urls = "".join(f"<url><loc>{base}{path}</loc></url>" for path in paths)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    )


def sources_of(store: VectorStore) -> dict[str, str]:
    """Each document id with the URL its chunks cite."""
    rows = store.connection.execute(
        "SELECT DISTINCT source, json_extract_string(metadata, '$.url') FROM chunks"
    ).fetchall()
    return dict(rows)


def test_a_site_is_read_from_its_sitemap_and_refreshed_with_conditional_requests(
    serve, store: VectorStore
) -> None:
    site, base = serve()
    docs_site(site)
    site.put("/docs/limits.md", "# Limits\n\nAt most one hundred requests a minute per key.\n")
    site.put("/blog/news.html", page("News", "Not documentation."))
    site.put("/robots.txt", f"User-agent: *\nAllow: /\nSitemap: {base}/sitemap-index.xml\n")
    site.put(
        "/sitemap-index.xml",
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{base}/pages.xml.gz</loc></sitemap>"
        f"<sitemap><loc>{base}/more.xml</loc></sitemap></sitemapindex>",
        "application/xml",
    )
    listed = ["/docs/", "/docs/guide/install.html", "/docs/retries.html#top", "/blog/news.html"]
    site.put("/pages.xml.gz", gzip.compress(sitemap(base, listed).encode()), "application/gzip")
    twins = ["/docs/limits.html", "/docs/limits.md"]
    site.put("/more.xml", sitemap(base, twins), "application/xml")

    first = index_source(store, f"{base}/docs/")
    assert (first.kind, first.files_new, first.failed, first.skipped) == ("site", 4, [], [])
    assert sources_of(store) == {
        "index.html": f"{base}/docs/",
        "guide/install.html": f"{base}/docs/guide/install.html",
        "retries.html": f"{base}/docs/retries.html",
        "limits.md": f"{base}/docs/limits.html",  # the twin, cited as the page
    }
    hits = store.query("how many requests per minute?", top_k=1)
    assert hits[0].chunk.source == "limits.md"
    assert {entry.user_agent for entry in site.log} == {USER_AGENT}
    assert "/docs/limits.html" not in [entry.path for entry in site.log]

    site.log.clear()
    second = index_source(store, f"{base}/docs/")
    assert all(entry.conditional and entry.status == 304 for entry in site.pages())
    assert len(site.pages()) == 4
    assert (second.files_unchanged, second.files_read, second.chunks_embedded) == (4, 0, 0)

    site.put("/docs/retries.html", page("Retries", "Failed requests are retried five times."))
    site.log.clear()
    third = index_source(store, f"{base}/docs/")
    assert (third.files_changed, third.files_unchanged, third.chunks_embedded) == (1, 3, 1)
    assert [entry.path for entry in site.pages() if entry.status == 200] == ["/docs/retries.html"]
    (record,) = store.manifest.sources
    assert (record.kind, record.location, record.documents) == ("site", f"{base}/docs/", 4)


def test_a_site_without_a_sitemap_is_crawled_from_its_start_page(serve, tmp_path: Path) -> None:
    site, base = serve()
    links = (
        '<a href="guide/install.html#step-2">Install</a> <a href="retries.html?tab=2">Retries</a>'
        f' <a href="{base}/blog/news.html">Blog</a> <a href="https://example.com/x">Out</a>'
        ' <a href="limits.html">Limits</a> <a href="logo.png">Logo</a>'
    )
    site.put("/docs/", page("Welcome", "Start with the installation guide.", links=links))
    site.put(
        "/docs/guide/install.html",
        page("Install", "Run pip install to install it.", links='<a href="../">Home</a>'),
    )
    site.put(
        "/docs/retries.html",
        page("Retries", "Failed requests are retried with backoff.", links='<a href="old">x</a>'),
    )
    canonical = f'<link rel="canonical" href="{base}/docs/retries.html">'
    site.put("/docs/old", page("Retries", "The same page at an old address.", head=canonical))
    twin = '<link rel="alternate" type="text/markdown" href="limits.md">'
    site.put("/docs/limits.html", page("Limits", "Quotas.", head=twin))
    site.put("/docs/limits.md", "# Limits\n\nAt most one hundred requests a minute per key.\n")
    site.put("/blog/news.html", page("News", "Not documentation."))
    db = str(tmp_path / "crawl.duckdb")

    first = run_cli("index", f"{base}/docs/", "--db", db, "--json")
    assert first.exit_code == 0, first.stderr
    summary = json.loads(first.stdout)
    assert (summary["kind"], summary["files_new"], summary["failed"]) == ("site", 4, [])
    requested = {entry.path for entry in site.log}
    assert "/blog/news.html" not in requested and "/docs/logo.png" not in requested
    assert "/docs/retries.html?tab=2" not in requested  # the query string is dropped
    with VectorStore(db, read_only=True) as store:
        assert sources_of(store) == {
            "index.html": f"{base}/docs/",
            "guide/install.html": f"{base}/docs/guide/install.html",
            "retries.html": f"{base}/docs/retries.html",
            "limits.md": f"{base}/docs/limits.html",
        }

    site.log.clear()
    second = run_cli("index", f"{base}/docs/", "--db", db, "--json", "--progress")
    assert second.exit_code == 0, second.stderr
    assert "crawling: 5 pages" in second.stderr  # the crawl's own count, then the reading's
    again = json.loads(second.stdout)
    assert (again["files_unchanged"], again["files_read"], again["chunks_embedded"]) == (4, 0, 0)
    assert all(entry.conditional and entry.status == 304 for entry in site.pages())

    # A page that changes is read again; its links are found anew.
    site.put("/docs/limits.md", "# Limits\n\nAt most fifty requests a minute per key.\n")
    site.log.clear()
    third = json.loads(run_cli("index", f"{base}/docs/", "--db", db, "--json").stdout)
    assert (third["files_changed"], third["files_unchanged"], third["chunks_embedded"]) == (1, 3, 1)


def test_a_crawled_page_that_fails_still_leads_to_the_pages_it_links(
    serve, store: VectorStore
) -> None:
    site, base = serve()
    site.put("/docs/", page("Welcome", "Start here.", links='<a href="guide.html">Guide</a>'))
    site.put("/docs/guide.html", page("Guide", "The guide.", links='<a href="deep.html">D</a>'))
    site.put("/docs/deep.html", page("Deep", "Only the guide links this page."))
    index_source(store, f"{base}/docs/")
    site.behave("/docs/guide.html", lambda _: (302, {"Location": "/docs/guide.html"}, b""))
    summary = index_source(store, f"{base}/docs/")
    assert [problem.source for problem in summary.failed] == ["guide.html"]
    assert (summary.files_unchanged, summary.chunks_pruned) == (2, 0)
    assert set(sources_of(store)) == {"index.html", "guide.html", "deep.html"}


def test_an_llms_txt_lists_the_pages_to_read(
    serve, store: VectorStore, caplog: pytest.LogCaptureFixture
) -> None:
    site, base = serve()
    docs_site(site)
    site.put("/docs/guide/install.md", "# Install\n\nRun pip install to install it.\n")
    site.put(
        "/docs/llms.txt",
        "# Example\n\n> An example library.\n\n## Docs\n\n"
        "- [Install](guide/install.md): how to install\n"
        f"- [Retries]({base}/docs/retries.html): the retry policy\n"
        "- [Limits](/docs/limits.html)\n- [Elsewhere](https://example.com/docs/x.md)\n"
        "- [Install as HTML](guide/install.html)\n- [Blog](/blog/post.md)\n",
        "text/plain",
    )
    summary = index_source(store, f"{base}/docs/llms.txt")
    assert (summary.kind, summary.files_new, summary.failed) == ("llms.txt", 3, [])
    assert "1 linked pages of the site are outside" in caplog.text
    assert sources_of(store) == {
        "guide/install.md": f"{base}/docs/guide/install.html",
        "retries.html": f"{base}/docs/retries.html",
        "limits.html": f"{base}/docs/limits.html",
    }
    site.log.clear()
    again = index_source(store, f"{base}/docs/llms.txt")
    assert (again.files_unchanged, again.chunks_embedded) == (3, 0)
    assert all(entry.conditional for entry in site.pages())


def test_an_llms_full_txt_is_split_into_its_pages(serve, store: VectorStore) -> None:
    site, base = serve()
    site.put(
        "/docs/llms-full.txt",
        "# Install\nSource: {base}/docs/guide/install\n\nRun pip install to install it.\n\n"
        "```sh\n# a comment, not a page\npip install example\n```\n\n"
        "# Retries\nSource: {base}/docs/retries.html\n\nFailed requests are retried.\n".replace(
            "{base}", base
        ),
        "text/plain",
    )
    summary = index_source(store, f"{base}/docs/llms-full.txt")
    assert (summary.kind, summary.files_new) == ("llms.txt", 2)
    assert sources_of(store) == {
        "guide/install.md": f"{base}/docs/guide/install",
        "retries.md": f"{base}/docs/retries.html",
    }
    (install,) = [c for c in store.document("guide/install.md") if "pip install" in c.text]
    assert "# a comment, not a page" in install.text

    site.log.clear()
    again = index_source(store, f"{base}/docs/llms-full.txt")
    assert [(entry.status, entry.conditional) for entry in site.log[1:]] == [(304, True)]
    assert (again.files_unchanged, again.chunks_embedded) == (2, 0)


def test_an_llms_full_txt_without_addresses_is_split_on_its_headings(
    serve, store: VectorStore
) -> None:
    site, base = serve()
    site.put(
        "/llms-full.txt",
        "# Example\n\n> A library.\n\n## Install\n\nRun pip install.\n\n## Retries\n\nThree.\n",
        "text/plain",
    )
    index_source(store, f"{base}/llms-full.txt")
    assert set(sources_of(store)) == {"index.md", "install.md", "retries.md"}


def test_robots_txt_wildcards_and_crawl_delay_are_honoured(serve, store: VectorStore) -> None:
    site, base = serve()
    docs_site(site)
    site.put("/docs/drafts/next.html", page("Next", "Not published yet."))
    site.put("/robots.txt", "User-agent: *\nDisallow: /*/drafts/\nCrawl-delay: 0.3\n", "text/plain")
    paths = ["/docs/", "/docs/guide/install.html", "/docs/drafts/next.html", "/docs/retries.html"]
    site.put("/sitemap.xml", sitemap(base, paths), "application/xml")
    started = time.monotonic()
    summary = index_source(store, f"{base}/docs/")
    elapsed = time.monotonic() - started
    assert [(p.source, p.reason) for p in summary.skipped] == [
        ("drafts/next.html", "robots.txt disallows it")
    ]
    assert "/docs/drafts/next.html" not in [entry.path for entry in site.log]
    # The requests after robots.txt (which told the delay) start 0.3 s apart; measured by the
    # client, since the server sees them as late as a loaded machine makes it.
    assert elapsed >= 0.3 * (len(site.log) - 2)


def calendar(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    """Every day links the next one, forever."""
    day = int(handler.path.rsplit("/", 1)[-1].removesuffix(".html"))
    links = f'<a href="{day + 1}.html">next</a> <a href="{day}.html?view=week">week</a>'
    return 200, {"Content-Type": "text/html"}, page(f"Day {day}", "Events.", links=links).encode()


def test_a_crawl_ends_at_max_pages(serve, store: VectorStore) -> None:
    site, base = serve()
    for day in range(100):
        site.behave(f"/docs/{day}.html", calendar)
    summary = index_source(store, f"{base}/docs/0.html", options=SourceOptions(max_pages=5))
    # robots.txt, the two places a sitemap may be, then five pages.
    assert summary.files_new == 5 and len(site.log) == 8
    assert not any("?" in entry.path for entry in site.log)


def bomb(_: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    compressed = gzip.compress(b"<p>" + b"a" * 50_000_000, compresslevel=9)
    headers = {"Content-Type": "text/html", "Content-Encoding": "gzip"}
    return 200, headers, compressed


def flaky(status: int, failures: int, retry_after: str | None = None) -> Callable:
    """Answers ``status`` ``failures`` times, then the page."""
    calls = []

    def answer(_: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        calls.append(1)
        if len(calls) <= failures:
            headers = {"Retry-After": retry_after} if retry_after else {}
            return status, headers, b"busy"
        body = page("Recovered", f"This page answered after {failures} failures.").encode()
        return 200, {"Content-Type": "text/html"}, body

    return answer


def slow(_: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    time.sleep(4)
    return 200, {"Content-Type": "text/html"}, page("Slow", "Too slow.").encode()


def test_pages_that_cannot_be_read_are_reported_and_the_rest_is_indexed(
    serve, store: VectorStore
) -> None:
    site, base = serve()
    docs_site(site)
    site.behave("/docs/loop.html", lambda _: (302, {"Location": "/docs/loop2.html"}, b""))
    site.behave("/docs/loop2.html", lambda _: (302, {"Location": "/docs/loop.html"}, b""))
    off_site = f"http://localhost:{base.rsplit(':', 1)[1]}/elsewhere"
    site.behave("/docs/moved.html", lambda _: (301, {"Location": off_site}, b""))
    # Without a Content-Length: the cap holds while the body streams.
    huge = page("Huge", "x " * 700_000).encode()
    site.behave("/docs/huge.html", lambda _: (200, {"Connection": "close"}, huge))
    site.behave("/docs/bomb.html", bomb)
    latin = page("Café", "Le café est servi à la française, déjà prêt.").replace("utf-8", "")
    site.put("/docs/latin.html", latin.encode("latin-1"), "text/html; charset=iso-8859-1")
    site.behave("/docs/busy.html", flaky(429, 1, retry_after="1"))
    site.behave("/docs/down.html", flaky(503, 2))
    site.behave("/docs/slow.html", slow)
    paths = [
        "/docs/",
        "/docs/guide/install.html",
        *(f"/docs/{name}.html" for name in ("retries", "limits", "loop", "moved", "huge")),
        *(f"/docs/{name}.html" for name in ("bomb", "latin", "busy", "down", "slow", "gone")),
    ]
    site.put("/sitemap.xml", sitemap(base, paths), "application/xml")
    options = SourceOptions(max_file_bytes=1_000_000, timeout=2.0)

    summary = index_source(store, f"{base}/docs/", options=options)
    failed = {problem.source: problem.reason for problem in summary.failed}
    skipped = {problem.source: problem.reason for problem in summary.skipped}
    assert set(failed) == {"loop.html", "slow.html", "gone.html"}
    assert "redirect loop" in failed["loop.html"]
    assert "timed out after 2 s" in failed["slow.html"]
    assert "not found (404)" in failed["gone.html"]
    assert set(skipped) == {"moved.html", "huge.html", "bomb.html"}
    assert "redirects off the site" in skipped["moved.html"]
    assert "larger than the 1 MB limit" in skipped["huge.html"]
    assert "larger than the 1 MB limit" in skipped["bomb.html"]
    indexed = sources_of(store)
    assert {"latin.html", "busy.html", "down.html"} <= set(indexed)
    assert "Le café est servi" in store.document("latin.html")[0].text
    assert [entry.status for entry in site.log if entry.path == "/docs/down.html"] == [
        503,
        503,
        200,
    ]


@pytest.mark.slow  # the failing page is retried with backoff: 3.5 s
def test_a_page_that_fails_is_kept_and_a_page_that_is_gone_is_dropped(
    serve, store: VectorStore
) -> None:
    site, base = serve()
    docs_site(site)
    paths = ["/docs/", "/docs/guide/install.html", "/docs/retries.html", "/docs/limits.html"]
    site.put("/sitemap.xml", sitemap(base, paths), "application/xml")
    index_source(store, f"{base}/docs/")
    site.behave("/docs/retries.html", lambda _: (500, {}, b"broken"))
    del site.files["/docs/limits.html"]
    options = SourceOptions(timeout=5.0)
    summary = index_source(store, f"{base}/docs/", options=options)
    assert {problem.source for problem in summary.failed} == {"retries.html", "limits.html"}
    assert set(sources_of(store)) == {"index.html", "guide/install.html", "retries.html"}


def test_credentials_and_headers_are_sent_but_never_stored(serve, tmp_path: Path) -> None:
    site, base = serve()
    docs_site(site)
    site.put("/docs/llms.txt", "- [Install](guide/install.html)\n- [Retries](retries.html)\n")
    site.required_auth = "Basic " + base64.b64encode(b"reader:s3cret").decode()
    db = tmp_path / "private.duckdb"
    location = base.replace("://", "://reader:s3cret@") + "/docs/llms.txt"

    result = run_cli("index", location, "--db", str(db), "--header", "X-Token: hush", "--json")
    assert result.exit_code == 0, result.stderr
    assert {(entry.authorization, entry.header) for entry in site.log} == {
        (site.required_auth, "hush")
    }
    assert json.loads(result.stdout)["folder"] == f"{base}/docs/llms.txt"
    assert "s3cret" not in result.output and "hush" not in result.output
    with VectorStore(db, read_only=True) as store:
        assert store.manifest.sources[0].location == f"{base}/docs/llms.txt"
    assert b"s3cret" not in db.read_bytes() and b"hush" not in db.read_bytes()


def refused(_: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    return 503, {}, b"down"


XML_BOMB = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    '<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&lol2;</loc></url>'
    "</urlset>"
)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing", r"/docs/: not found \(404\); check the URL"),
        ("robots", r"robots\.txt disallows .* to duckdb-vectors; ask its owners"),
        ("bomb", r"the sitemap declares XML entities .* is refused"),
        pytest.param(
            "refused",
            r"cannot connect \(.*\); check the URL, and that the site is up",
            marks=pytest.mark.slow,  # retried with backoff: 3.5 s
        ),
        ("unknown host", r"cannot connect \(.*\); check the URL"),
    ],
)
def test_a_site_that_cannot_be_read_is_one_line(
    serve, tmp_path: Path, case: str, message: str
) -> None:
    site, base = serve()
    if case == "robots":
        docs_site(site)
        site.put("/robots.txt", "User-agent: *\nDisallow: /\n", "text/plain")
    elif case == "bomb":
        docs_site(site)
        site.put("/sitemap.xml", XML_BOMB, "application/xml")
    elif case == "refused":
        base = "http://127.0.0.1:9"  # the discard port: nothing listens there
    elif case == "unknown host":
        base = "http://docs.example.invalid"
    db = tmp_path / "x.duckdb"
    result = run_cli("index", f"{base}/docs/", "--db", str(db))
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: ")
    assert re.search(message, result.stderr), result.stderr
    assert not db.exists()


@pytest.mark.slow  # retries with backoff, then a timeout
def test_a_start_page_that_stays_down_or_stalls_is_one_line(serve, store: VectorStore) -> None:
    site, base = serve()
    site.behave("/docs/", refused)
    with pytest.raises(InvalidSourceError, match=r"/docs/: the server answered 503"):
        index_source(store, f"{base}/docs/")
    site.behave("/docs/", slow)
    with pytest.raises(InvalidSourceError, match=r"timed out after 0\.5 s"):
        index_source(store, f"{base}/docs/", options=SourceOptions(timeout=0.5))
