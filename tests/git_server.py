"""Real git repositories for the tests, and a loopback HTTP server in front of them: git's own
``git http-backend`` (CGI), run per request by a small Python server that can require Basic
auth, as a private repository on a forge does. It serves a folder of bare repositories with
filters allowed (``uploadpack.allowFilter``, as GitHub and GitLab do) and counts the bytes it
sends, so a test can tell what a fetch downloaded.
"""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

# Commits made here are the same wherever the tests run: no user configuration, fixed names.
GIT_ENVIRONMENT = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
}


def git(repository: Path, *arguments: str) -> str:
    """Run git in ``repository``; its stdout, stripped."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(
        ["git", "-C", str(repository), *arguments],
        capture_output=True,
        text=True,
        env=environment | GIT_ENVIRONMENT,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(arguments)} failed: {done.stderr}")
    return done.stdout.strip()


def commit_files(repository: Path, files: dict[str, str | None], message: str) -> str:
    """Write (or, for None, delete) files, commit them all; the new commit's id."""
    for name, text in files.items():
        path = repository / name
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    git(repository, "add", "--all")
    git(repository, "commit", "--quiet", "--message", message)
    return git(repository, "rev-parse", "HEAD")


def publish(repository: Path, served: Path, name: str) -> Path:
    """A bare copy of ``repository`` under ``served`` (where the server finds it), kept in sync
    by pushing to it; filters allowed, as on a forge."""
    bare = served / name
    git(served, "clone", "--quiet", "--bare", str(repository), str(bare))
    git(bare, "config", "uploadpack.allowFilter", "true")
    git(repository, "remote", "add", "served", str(bare))
    return bare


def push(repository: Path) -> None:
    git(repository, "push", "--quiet", "--force", "--all", "served")
    git(repository, "push", "--quiet", "--force", "--tags", "served")


class GitHttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path, credentials: str | None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = root
        self.credentials = credentials  # "user:token", or None for a public server
        self.bytes_sent = 0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: GitHttpServer

    def do_GET(self) -> None:
        self._backend()

    def do_POST(self) -> None:
        self._backend()

    def _backend(self) -> None:
        if not self._authorized():
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="private"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        environment = {
            "PATH": os.environ["PATH"],
            "GIT_PROJECT_ROOT": str(self.server.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "REQUEST_METHOD": self.command,
            "PATH_INFO": parts.path,
            "QUERY_STRING": parts.query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": self.client_address[0],
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),  # protocol v2
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
        }
        done = subprocess.run(
            ["git", "http-backend"], input=body, env=environment, capture_output=True, check=False
        )
        head, _, data = done.stdout.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(": ")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        with self.server.lock:
            self.server.bytes_sent += len(data)

    def _authorized(self) -> bool:
        if self.server.credentials is None:
            return True
        expected = base64.b64encode(self.server.credentials.encode()).decode()
        return self.headers.get("Authorization") == f"Basic {expected}"

    def log_message(self, format: str, *arguments: object) -> None:
        pass  # quiet: the tests read their own output


@contextmanager
def serving(root: Path, credentials: str | None = None) -> Iterator[GitHttpServer]:
    """Serve the bare repositories under ``root`` on a loopback port until the block ends."""
    server = GitHttpServer(root, credentials)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
