"""The container engine, through the Docker SDK for Python: builds, files in images, runs.

Works against whatever ``DOCKER_HOST`` or the default socket gives: Docker Engine, Docker
Desktop, or Podman's Docker-compatible service. Every container made here is removed before
the call returns, also when it fails.
"""

from __future__ import annotations

import io
import json
import os
import re
import tarfile
import time
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import IO, Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound
from docker.models.containers import Container
from docker.models.images import Image
from docker.utils import parse_repository_tag
from docker.utils.socket import STDOUT, frames_iter

from ..errors import BuildError, EngineError
from ..progress import StatusLine

# The hardened run a frozen index image must survive: no network, a read-only root, a
# non-root user the image does not know, no capabilities.
HARDENED: dict[str, Any] = {
    "network_mode": "none",
    "read_only": True,
    "user": "65534",
    "cap_drop": ["ALL"],
}
CREATED_BY_LABEL = "io.duckdb-vectors.created-by"
BUILD_LOG_TAIL = 15
_STEP = re.compile(r"^(?:\[\d+/\d+\] )?(?:STEP|Step) (\d+)/(\d+) ?: ?(.*)$")
_BUILT = re.compile(r"^(?:Successfully built |--> )?([0-9a-f]{12,64})$")


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    stdout: str
    stderr: str
    seconds: float


def connect() -> docker.DockerClient:
    """A client for the engine, or one line saying how to get one."""
    host = os.environ.get("DOCKER_HOST") or "the default socket (/var/run/docker.sock)"
    try:
        client = docker.from_env()
        client.ping()
    except DockerException:
        raise EngineError(
            f"no container engine answers at {host}: start Docker (or Podman's Docker-"
            "compatible service: podman system service), or set DOCKER_HOST to one that runs"
        ) from None
    return client


def build(
    client: docker.DockerClient,
    context: IO[bytes],
    *,
    dockerfile: str = "Dockerfile",
    buildargs: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    platform: str | None = None,
    no_cache: bool = False,
    status: StatusLine | None = None,
) -> str:
    """Build from a tar context; the new image's id. Progress goes to ``status``."""
    try:
        events = client.api.build(
            fileobj=context,
            custom_context=True,
            dockerfile=dockerfile,
            buildargs=buildargs,
            labels=labels,
            platform=platform,
            nocache=no_cache,
            rm=True,
            forcerm=True,
            decode=True,
        )
        return _follow_build(events, status or StatusLine(io.StringIO(), live=False))
    except APIError as error:
        raise BuildError(f"the engine refused the build: {error.explanation}", []) from None


def _follow_build(events: Iterable[dict[str, Any]], status: StatusLine) -> str:
    tail: deque[str] = deque(maxlen=BUILD_LOG_TAIL)
    step = ""
    image_id = None
    for event in events:
        if "error" in event:
            message = str(event.get("error", "")).strip().splitlines() or ["failed"]
            raise BuildError(_failure_line(list(tail), message[-1]), list(tail))
        image_id = event.get("aux", {}).get("ID", image_id)
        for line in _lines(event.get("stream", "")):
            tail.append(line)
            if found := _STEP.match(line):
                number, total, instruction = found.groups()
                step = f"step {number}/{total}"
                status.final(f"{step}: {instruction}")
            elif built := _BUILT.match(line):
                image_id = built.group(1)
            else:
                status.update(f"{step}: {line}" if step else line)
    status.clear()
    if image_id is None:
        raise BuildError("the build ended without an image", list(tail))
    return image_id


def _lines(text: str) -> Iterator[str]:
    for line in re.split(r"[\r\n]+", text):
        if line.strip():
            yield line.rstrip()


def _failure_line(tail: list[str], engine_message: str) -> str:
    """The most useful one line about a failed step: our own ``Error:`` line if it printed one."""
    ours = [line for line in tail if line.startswith("Error: ")]
    return ours[-1].removeprefix("Error: ") if ours else engine_message


def read_file(client: docker.DockerClient, image: str, path: str) -> bytes:
    """A file's bytes from an image, through a created (never started) container."""
    with _container(client, image, command=["true"]) as container:
        chunks, _ = container.get_archive(path)
        with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
            member = tar.extractfile(tar.getmembers()[0])
            if member is None:
                raise EngineError(f"{path} in {image} is not a file")
            return member.read()


def run(
    client: docker.DockerClient, image: str, command: list[str], timeout: float = 300
) -> RunResult:
    """Run ``command`` in ``image`` hardened (see HARDENED) and wait for it."""
    try:
        with _container(client, image, command=command, **HARDENED) as container:
            started = time.monotonic()
            container.start()
            exit_code = int(container.wait(timeout=timeout).get("StatusCode", -1))
            seconds = time.monotonic() - started
            stdout = container.logs(stdout=True, stderr=False).decode(errors="replace")
            stderr = container.logs(stdout=False, stderr=True).decode(errors="replace")
    except APIError as error:
        raise EngineError(f"{image} did not run: {error.explanation}") from None
    return RunResult(exit_code, stdout, stderr, seconds)


@dataclass(frozen=True)
class McpServerAnswer:
    """What an image's MCP server said: its ``initialize`` result and its ``tools/list``."""

    initialize: dict[str, Any]
    tools: list[dict[str, Any]]


def mcp_describe(
    client: docker.DockerClient, image: str, protocol_version: str, timeout: float = 120
) -> McpServerAnswer:
    """Start ``image`` with no command and stdin attached, as ``docker run -i IMAGE`` does (and
    the Docker MCP Gateway), hardened; complete an MCP ``initialize`` and list its tools."""
    with _container(client, image, stdin_open=True, **HARDENED) as container:
        attached = client.api.attach_socket(
            container.id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        )
        attached._sock.settimeout(timeout)
        container.start()
        session = _JsonRpc(attached._sock, frames_iter(attached, tty=False))
        try:
            initialized = session.request(
                "initialize",
                {
                    "protocolVersion": protocol_version,
                    "capabilities": {},
                    "clientInfo": {"name": "duckdb-vectors-bake", "version": "1"},
                },
            )
            session.notify("notifications/initialized")
            tools: list[dict[str, Any]] = []
            cursor: str | None = None
            while True:
                listed = session.request("tools/list", {"cursor": cursor} if cursor else {})
                tools += listed.get("tools", [])
                cursor = listed.get("nextCursor")
                if not cursor:
                    break
        except OSError as error:
            raise EngineError(f"the MCP server did not answer: {error}") from None
        finally:
            attached.close()
    return McpServerAnswer(initialized, tools)


class _JsonRpc:
    """Newline-delimited JSON-RPC over an attached container's stdin and stdout frames."""

    def __init__(self, sock: Any, frames: Iterator[tuple[int, bytes]]) -> None:
        self.sock = sock
        self.frames = frames
        self.buffered = b""
        self.stderr = b""
        self.next_id = 1

    def notify(self, method: str) -> None:
        self._send({"jsonrpc": "2.0", "method": method})

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of ``method``; an EngineError if it was refused or never answered."""
        request_id, self.next_id = self.next_id, self.next_id + 1
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            while b"\n" in self.buffered:
                line, self.buffered = self.buffered.split(b"\n", 1)
                message = json.loads(line)
                if message.get("id") == request_id:
                    if "result" not in message:
                        raise EngineError(f"the MCP server refused {method}: {message}")
                    return dict(message["result"])
            frame = next(self.frames, None)
            if frame is None:
                last = self.stderr.decode(errors="replace").strip().splitlines()[-1:]
                raise EngineError(
                    f"the MCP server exited before answering {method}: {(last or ['no output'])[0]}"
                )
            stream, data = frame
            if stream == STDOUT:
                self.buffered += data
            else:
                self.stderr += data

    def _send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")


def remove_image(client: docker.DockerClient, image: str) -> None:
    """Remove an image this bake made, if it is still there and nothing names it: a fully
    cached rebuild can yield the very image an earlier bake tagged, which must stay."""
    with suppress(ImageNotFound, APIError):
        if not client.images.get(image).tags:
            client.images.remove(image, noprune=False)


def tag_image(client: docker.DockerClient, image: str, reference: str) -> Image:
    repository, tag = parse_repository_tag(reference)
    try:
        found = client.images.get(image)
        found.tag(repository, tag or "latest")
    except APIError as error:
        message = f"the engine refused the tag {reference!r}: {error.explanation}"
        raise EngineError(message) from None
    return found


def image_size(client: docker.DockerClient, image: str) -> int | None:
    try:
        return int(client.images.get(image).attrs["Size"])
    except (ImageNotFound, APIError, KeyError, TypeError, ValueError):
        return None


@contextmanager
def _container(client: docker.DockerClient, image: str, **options: Any) -> Iterator[Container]:
    """A created container that is removed on leaving the block, whatever happened in it."""
    labels = {CREATED_BY_LABEL: "duckdb-vectors"}
    container = client.containers.create(image, labels=labels, **options)
    try:
        yield container
    finally:
        with suppress(APIError):
            container.remove(force=True)
