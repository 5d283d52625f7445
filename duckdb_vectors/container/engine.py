"""The container engine (``DOCKER_HOST`` or the default socket: Docker, or Podman's
Docker-compatible service) through the Docker SDK: builds, files in images, runs. Every
container made here is removed before the call returns, also when it fails.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from typing import IO, Any

import anyio
import anyio.to_thread
import docker
from docker.errors import APIError, DockerException, ImageNotFound
from docker.models.containers import Container
from docker.models.images import Image
from docker.utils import parse_repository_tag
from docker.utils.socket import STDOUT, frames_iter
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import (
    CONNECTION_CLOSED,
    Implementation,
    PaginatedRequestParams,
    Tool,
    jsonrpc_message_adapter,
)

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
    network: str | None = None,
    status: StatusLine | None = None,
    notes: str | None = None,
) -> str:
    """Build from a tar context; the new image's id. Progress goes to ``status``, where the
    output lines that start with ``notes`` stay; ``network`` is the network of its RUN steps
    (``docker build --network``)."""
    try:
        events = client.api.build(
            fileobj=context,
            custom_context=True,
            dockerfile=dockerfile,
            buildargs=buildargs,
            labels=labels,
            platform=platform,
            nocache=no_cache,
            network_mode=network,
            rm=True,
            forcerm=True,
            decode=True,
        )
        return _follow_build(events, status or StatusLine(io.StringIO(), live=False), notes)
    except APIError as error:
        raise BuildError(f"the engine refused the build: {error.explanation}", []) from None


def _follow_build(
    events: Iterable[dict[str, Any]], status: StatusLine, notes: str | None = None
) -> str:
    tail: deque[str] = deque(maxlen=BUILD_LOG_TAIL)
    step, image_id = "", None
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
            elif notes and line.startswith(notes):
                status.final(line)
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
    """An image's MCP server's ``initialize`` result and ``tools/list``, as JSON objects."""

    initialize: dict[str, Any]
    tools: list[dict[str, Any]]


def mcp_describe(client: docker.DockerClient, image: str, timeout: float = 120) -> McpServerAnswer:
    """Start ``image`` with no command and stdin attached, as ``docker run -i IMAGE`` does (and
    the Docker MCP Gateway), hardened; complete an MCP ``initialize`` and list its tools."""
    with _container(client, image, stdin_open=True, **HARDENED) as container:
        attached = client.api.attach_socket(
            container.id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        )
        container.start()
        try:
            return anyio.run(_describe, _AttachedServer(attached), timeout)
        finally:
            attached.close()


async def _describe(server: _AttachedServer, timeout: float) -> McpServerAnswer:
    step, tools, failed = "initialize", list[Tool](), None
    async with (
        server.streams() as (read_stream, write_stream),
        ClientSession(read_stream, write_stream, client_info=_CLIENT) as session,
    ):
        # Caught in here: outside the session they would come wrapped in its task group's.
        with anyio.move_on_after(timeout) as waiting:
            try:
                initialized = await session.initialize()
                step, cursor = "tools/list", None
                while True:
                    listed = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
                    tools += listed.tools
                    cursor = listed.next_cursor
                    if not cursor:
                        break
            except MCPError as error:
                failed = error
    if waiting.cancelled_caught:
        raise EngineError(f"the MCP server did not answer {step} within {timeout:g} s")
    if server.failure is not None:
        raise EngineError(f"the MCP server did not answer: {server.failure}")
    if failed is not None and failed.code == CONNECTION_CLOSED:
        message = f"the MCP server exited before answering {step}: {server.last_stderr_line()}"
        raise EngineError(message)
    if failed is not None:
        raise EngineError(f"the MCP server refused {step}: {failed}")
    return McpServerAnswer(_as_json(initialized), [_as_json(tool) for tool in tools])


_CLIENT = Implementation(name="duckdb-vectors-bake", version="1")


def _as_json(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


class _AttachedServer:
    """An attached container's stdin and multiplexed stdout/stderr as the message streams of
    the SDK's ClientSession: newline-delimited JSON-RPC, as its stdio transport speaks."""

    def __init__(self, attached: Any) -> None:
        self.sock = attached._sock
        self.frames = frames_iter(attached, tty=False)
        self.stderr = b""
        self.failure: OSError | None = None

    def last_stderr_line(self) -> str:
        lines = self.stderr.decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else "no output"

    @asynccontextmanager
    async def streams(self) -> AsyncIterator[tuple[Any, Any]]:
        to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._read, to_session)
            tasks.start_soon(self._write, from_session)
            try:
                yield read_stream, write_stream
            finally:
                tasks.cancel_scope.cancel()

    async def _read(self, to_session: Any) -> None:
        """Frames to messages until the output ends or the socket fails; closing the stream
        then fails the pending request as a closed connection. A line that is no JSON-RPC
        message reaches the session as the error, as on stdio."""
        async with to_session:
            buffered = b""
            while True:
                try:
                    # Abandoned when the session is done: removing the container ends the read.
                    frame = await anyio.to_thread.run_sync(
                        next, self.frames, None, abandon_on_cancel=True
                    )
                except OSError as error:
                    self.failure = error
                    return
                if frame is None:
                    return
                stream, data = frame
                if stream != STDOUT:
                    self.stderr += data
                    continue
                *lines, buffered = (buffered + data).split(b"\n")
                for line in lines:
                    if line.strip():
                        await to_session.send(_parsed(line))

    async def _write(self, from_session: Any) -> None:
        """Messages to lines on stdin, until the session ends or the socket fails."""
        async with from_session:
            async for message in from_session:
                line = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    await anyio.to_thread.run_sync(self.sock.sendall, line.encode() + b"\n")
                except OSError as error:
                    self.failure = self.failure or error
                    return


def _parsed(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as error:
        return error


def remove_image(client: docker.DockerClient, image: str) -> None:
    """Remove an image a bake made unless something names it: a fully cached rebuild can
    yield the very image an earlier bake tagged."""
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
