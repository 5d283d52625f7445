"""A polite HTTP client for one site's origin: what the llms.txt and site sources fetch with.

It names itself (``USER_AGENT``), honours robots.txt, keeps at most ``concurrency`` requests
in flight (its callers' thread pool is that size: every request goes to the one origin) and
spaces their starts by ``delay`` (or robots.txt's Crawl-delay, if longer). A request is retried
with exponential backoff on 429, 5xx and failed connections, waiting as ``Retry-After`` asks.
Redirects are followed within the origin only. A body is capped while it streams, after
decompression (so neither a lying Content-Length nor a gzip bomb gets past the cap), and
re-encoded as UTF-8 when it declares another charset. Validators from the last run make a
request conditional; a 304 says the document is unchanged.

Credentials (``user:pass@`` in the URL) are taken out of the URL and sent as Basic auth;
headers are sent as given. Neither appears in an error, a log line or the index.
"""

from __future__ import annotations

import email.utils
import re
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import TypeVar
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

import httpx
from protego import Protego

from ..errors import FetchError
from . import Problem, SourceOptions, Validators

try:
    _VERSION = version("duckdb-vectors")
except PackageNotFoundError:  # a source checkout that was never installed
    _VERSION = "0"
ROBOTS_AGENT = "duckdb-vectors"  # the token robots.txt groups name
# The project records no home page of its own (pyproject.toml): its package's page says who.
USER_AGENT = f"{ROBOTS_AGENT}/{_VERSION} (+https://pypi.org/project/duckdb-vectors/)"
RETRIES = 3  # after the first attempt
BACKOFF = 0.5  # seconds before the first retry, doubled for each next one
MAX_RETRY_AFTER = 120.0  # a server asking to wait longer than this fails the page for this run
MAX_REDIRECTS = 10
_RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
_GONE_STATUSES = frozenset({404, 410})
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([\w.:-]+)""", re.IGNORECASE)
T = TypeVar("T")
R = TypeVar("R")


def problem_of(error: FetchError) -> Problem:
    """A page's problem in a run: a page that fails this time keeps its chunks."""
    return Problem(str(error), skipped=error.skipped, keep=not (error.gone or error.skipped))


@dataclass(frozen=True)
class _Again:
    """An answer worth asking again for (429, 5xx, a failed connection), after ``wait``."""

    reason: str
    status: int | None = None
    wait: float = 0.0


@dataclass(frozen=True)
class Response:
    """A 200's body (UTF-8 when it declared another charset), or a 304 (``body`` None)."""

    url: str  # after redirects
    status: int
    content_type: str  # the media type, lowercase, without parameters
    validators: dict[str, str]
    body: bytes | None = None

    @property
    def unchanged(self) -> bool:
        return self.status == 304


@dataclass(frozen=True)
class Address:
    """A SOURCE URL split into what may be shown (``url``) and its credentials."""

    url: str
    auth: tuple[str, str] | None = None

    @classmethod
    def parse(cls, location: str) -> Address:
        parts = urlsplit(location)
        auth = None
        if parts.username is not None or parts.password is not None:
            auth = (unquote(parts.username or ""), unquote(parts.password or ""))
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        if parts.port is not None:
            netloc += f":{parts.port}"
        clean = SplitResult(parts.scheme.lower(), netloc, parts.path or "/", parts.query, "")
        return cls(urlunsplit(clean), auth)


def origin(url: str) -> str:
    """``scheme://host[:port]``, the scope of a fetcher, a redirect and a crawl."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


@dataclass
class _Pacer:
    """Spaces the starts of requests to one host by ``delay`` seconds."""

    delay: float
    _next: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_turn(self) -> None:
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.delay
        if start > now:
            time.sleep(start - now)


class Fetcher:
    """Fetches the URLs of one origin (``Address``) politely; see the module."""

    def __init__(self, address: Address, options: SourceOptions) -> None:
        self.origin = origin(address.url)
        self.options = options
        headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "gzip, deflate"}
        self.client = httpx.Client(
            headers={**headers, **options.headers},
            auth=address.auth,
            timeout=httpx.Timeout(options.timeout),
            limits=httpx.Limits(max_connections=options.concurrency),
            follow_redirects=False,  # followed here, within the origin only
        )
        self.pacer = _Pacer(options.delay)
        self.robots = Protego.parse("")

    def load_robots(self) -> Protego:
        """Read the origin's robots.txt (none, or a 4xx: everything is allowed). Protego, not
        the standard library's robotparser: it matches the ``*`` and ``$`` wildcards that
        documentation sites use (``Disallow: /*.pdf$``) as Google does, and reads Crawl-delay.
        Raises ``FetchError`` when the origin cannot be reached, or robots.txt fails (5xx),
        which RFC 9309 says means nothing may be crawled."""
        try:
            response = self.get(f"{self.origin}/robots.txt", robots=False)
        except FetchError as error:
            # A robots.txt that is not there (4xx), too large or elsewhere rules nothing out.
            if error.skipped or error.gone or (error.status is not None and error.status < 500):
                return self.robots
            raise
        text = (response.body or b"").decode("utf-8", "replace")
        self.robots = Protego.parse(text)
        crawl_delay = self.robots.crawl_delay(ROBOTS_AGENT)
        if crawl_delay and crawl_delay > self.pacer.delay:
            self.pacer.delay = float(crawl_delay)
        return self.robots

    def allowed(self, url: str) -> bool:
        return self.robots.can_fetch(url, ROBOTS_AGENT)

    def get(
        self, url: str, validators: Validators | None = None, *, robots: bool = True
    ) -> Response:
        """The document at ``url``: conditional on ``validators`` (a 304 gives no body),
        redirects followed within the origin. Raises ``FetchError``."""
        if robots and not self.allowed(url):
            raise FetchError(f"{url}: robots.txt disallows it", skipped=True)
        seen = {url}
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            response = self._attempts(current, validators)
            if isinstance(response, Response):
                return response
            target = str(httpx.URL(current).join(response).copy_with(fragment=None))
            if origin(target) != self.origin:
                raise FetchError(
                    f"{url}: redirects off the site, to {origin(target)}", skipped=True
                )
            if target in seen:
                raise FetchError(f"{url}: redirect loop; fix the site's redirects")
            seen.add(target)
            current = target
        raise FetchError(f"{url}: more than {MAX_REDIRECTS} redirects")

    def _attempts(self, url: str, validators: Validators | None) -> Response | str:
        """One URL's response, asked again while it says so; for a redirect, its target."""
        for attempt in range(RETRIES + 1):
            self.pacer.wait_turn()
            answer = self._once(url, validators)
            if not isinstance(answer, _Again):
                return answer
            if answer.wait > MAX_RETRY_AFTER:
                reason = f"{answer.reason}, asking to wait {answer.wait:.0f} s; try again later"
                raise FetchError(f"{url}: {reason}", status=answer.status)
            if attempt == RETRIES:
                raise FetchError(f"{url}: {answer.reason}", status=answer.status)
            time.sleep(max(answer.wait, BACKOFF * 2**attempt))
        raise AssertionError("unreachable")

    def _once(self, url: str, validators: Validators | None) -> Response | str | _Again:
        try:
            with self.client.stream("GET", url, headers=_conditional(validators)) as response:
                return self._response(url, response)
        except httpx.ConnectError as error:
            reason = f"cannot connect ({_first_line(error)})"
            if _unknown_host(error):  # no use asking again
                raise FetchError(f"{url}: {reason}") from None
            return _Again(reason)
        except (httpx.ConnectTimeout, httpx.RemoteProtocolError) as error:
            return _Again(f"connection failed ({type(error).__name__})")
        except httpx.TimeoutException:
            # Not asked again: a server that accepted and stalls is likely to stall again, and
            # asking again would multiply the wait by the attempts.
            raise FetchError(
                f"{url}: timed out after {self.options.timeout:g} s; try again later"
            ) from None
        except httpx.HTTPError as error:
            raise FetchError(f"{url}: {type(error).__name__}: {_first_line(error)}") from None

    def _response(self, url: str, response: httpx.Response) -> Response | str | _Again:
        status = response.status_code
        if status in _RETRIED_STATUSES:
            wait = _retry_after(response.headers.get("Retry-After"))
            return _Again(f"the server answered {status}", status, wait)
        if status in (301, 302, 303, 307, 308) and "Location" in response.headers:
            return response.headers["Location"]
        if status in _GONE_STATUSES:
            raise FetchError(f"{url}: not found ({status})", status=status, gone=True)
        content_type, charset = _media_type(response.headers.get("Content-Type", ""))
        found = {
            key: response.headers[header]
            for key, header in (("etag", "ETag"), ("last_modified", "Last-Modified"))
            if header in response.headers
        }
        if status == 304:
            return Response(url, status, content_type, found)
        if status != 200:
            raise FetchError(f"{url}: the server answered {status}", status=status)
        body = self._body(url, response)
        return Response(url, status, content_type, found, _utf8(body, charset, content_type))

    def _body(self, url: str, response: httpx.Response) -> bytes:
        cap = self.options.max_file_bytes
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > cap:
            raise _too_large(url, cap, int(declared))
        encoding = response.headers.get("Content-Encoding", "identity").lower().strip()
        if encoding not in ("identity", "gzip", "x-gzip", "deflate"):
            raise FetchError(f"{url}: unsupported Content-Encoding {encoding!r}")
        try:
            if encoding == "identity":
                return _joined(response.iter_raw(), cap)
            return inflate(response.iter_raw(), cap)
        except OverflowError:
            raise _too_large(url, cap) from None
        except zlib.error as error:
            raise FetchError(f"{url}: corrupt {encoding} body ({error})") from None

    def close(self) -> None:
        self.client.close()


def _conditional(validators: Validators | None) -> dict[str, str]:
    headers = {}
    if validators:
        if validators.get("etag"):
            headers["If-None-Match"] = validators["etag"]
        if validators.get("last_modified"):
            headers["If-Modified-Since"] = validators["last_modified"]
    return headers


def _retry_after(value: str | None) -> float:
    """Seconds a ``Retry-After`` header asks for (a number or an HTTP date); 0 without one."""
    if not value:
        return 0.0
    if value.strip().isdigit():
        return float(value.strip())
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return 0.0
    return max(0.0, when.timestamp() - time.time())


def _media_type(content_type: str) -> tuple[str, str | None]:
    media, _, parameters = content_type.partition(";")
    charset = None
    for parameter in parameters.split(";"):
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip("\"'").lower() or None
    return media.strip().lower(), charset


def _utf8(body: bytes, charset: str | None, content_type: str) -> bytes:
    """The body as UTF-8 when it declares another charset (the header's, else an HTML
    ``<meta charset>``); undeclared bytes are left to the chunker, which reads UTF-8."""
    if charset is None and content_type in ("text/html", "application/xhtml+xml"):
        found = _CHARSET.search(body[:4096])
        charset = found.group(1).decode("ascii").lower() if found else None
    if charset in (None, "utf-8", "utf8", "us-ascii", "ascii"):
        return body
    try:
        return body.decode(charset, "replace").encode("utf-8")
    except LookupError:  # a charset Python does not know: the chunker's decoding decides
        return body


def inflate(chunks: Iterable[bytes], cap: int) -> bytes:
    """gzip or zlib data decompressed, a step at a time so that no step makes more than the
    cap (a small bomb cannot fill memory). Raises OverflowError past ``cap`` bytes, zlib.error
    when it is corrupt."""
    inflater = zlib.decompressobj(32 + zlib.MAX_WBITS)  # 32: detect gzip or zlib headers
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        pending = chunk
        while pending:
            piece = inflater.decompress(pending, cap + 1 - size)
            pending = inflater.unconsumed_tail
            size += len(piece)
            if size > cap:
                raise OverflowError(cap)
            parts.append(piece)
    return b"".join(parts)


def _joined(chunks: Iterable[bytes], cap: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > cap:
            raise OverflowError(cap)
        parts.append(chunk)
    return b"".join(parts)


def _too_large(url: str, cap: int, size: int | None = None) -> FetchError:
    stated = f" ({size / 1e6:.1f} MB)" if size is not None else ""
    return FetchError(
        f"{url}: larger than the {cap / 1e6:g} MB limit{stated}; raise --max-page-size to index it",
        skipped=True,
    )


def _unknown_host(error: Exception) -> bool:
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, socket.gaierror):
        cause = cause.__cause__ or cause.__context__
    return cause is not None


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def in_parallel(work: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """``work(item)`` for each item on ``workers`` threads, yielded as each is done, with at
    most twice ``workers`` results waiting (so bodies do not pile up in memory). ``work`` must
    return its failures rather than raise them."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: set[Future[R]] = set()
        for item in items:
            pending.add(pool.submit(work, item))
            if len(pending) >= 2 * workers:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                yield from (future.result() for future in done)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            yield from (future.result() for future in done)
