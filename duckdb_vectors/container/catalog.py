"""A baked image as an MCP server entry for the Docker MCP Gateway (docker/mcp-gateway,
``pkg/catalog``), in two forms:

- the ``io.docker.server.metadata`` label, read from a self-describing image: only what
  describes the server (``ImportedServer``); the gateway ignores runtime fields there;
- a catalog file (``bake --catalog-entry FILE``): the entry under ``registry:`` with the image
  and the runtime fields only an operator's catalog may set.

The tools and the title are what the image's own MCP server answered, never a copy kept here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from docker.utils import parse_repository_tag

from .. import libraries
from ..index.manifest import Manifest
from ..models import IndexReport
from .engine import McpServerAnswer

SERVER_METADATA_LABEL = "io.docker.server.metadata"
DOCUMENTATION_LABEL = "org.opencontainers.image.documentation"
# One container for all tool calls (the model and index load once), and no network: the
# image needs none.
CATALOG_RUNTIME: dict[str, Any] = {"longLived": True, "disableNetwork": True}
_ANNOTATION_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
_LISTED_SOURCES = 5


def server_name(tag: str) -> str:
    """The server's name in a catalog: the image's name without registry, path or tag
    (``registry.example.com/team/docs:1.0`` is ``docs``)."""
    repository, _ = parse_repository_tag(tag)
    name = re.sub(r"[^a-z0-9]+", "-", repository.rsplit("/", 1)[-1].lower()).strip("-")
    return name or "duckdb-vectors"


def server_entry(
    tag: str, report: IndexReport, server: McpServerAnswer, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """The image's server entry, as the ``io.docker.server.metadata`` label carries it."""
    name = server_name(tag)
    info = server.initialize.get("serverInfo", {})
    entry: dict[str, Any] = {
        "name": name,
        "type": "server",
        "title": info.get("title") or info.get("name") or name,
        "description": _description(name, report),
    }
    documentation = (labels or {}).get(DOCUMENTATION_LABEL)
    if documentation:
        entry["readme"] = documentation
    entry["tools"] = [_tool(tool) for tool in server.tools]
    entry["metadata"] = {"category": "search", "tags": ["duckdb-vectors", "retrieval", "search"]}
    return entry


def write_catalog_entry(path: Path, entry: dict[str, Any], tag: str) -> None:
    """Write a catalog holding the one server ``entry`` describes, run from the image ``tag``."""
    server = {"name": entry["name"], "type": entry["type"], "image": tag}
    server |= {key: value for key, value in entry.items() if key not in server}
    catalog = {"registry": {entry["name"]: server | CATALOG_RUNTIME}}
    path.write_text(as_yaml(catalog), encoding="utf-8")


def as_yaml(document: dict[str, Any]) -> str:
    """YAML in the order given, multi-line strings as literal blocks."""
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def _description(name: str, report: IndexReport) -> str:
    held = libraries.listed(Manifest.model_validate(report.manifest)) if report.manifest else []
    if held:
        return (
            f"Search {name}, a frozen duckdb-vectors index of the docs of {len(held)} libraries"
            f" ({_libraries(held)}): {report.chunk_count} chunks, embedded with"
            f" {report.backend}. Pick a library (libraries), then hybrid search within it"
            " (meaning and exact words); fetch a hit in context or a whole document;"
            " read-only, no network."
        )
    sources = [source for source in report.sources if source]
    listed = ", ".join(sources[:_LISTED_SOURCES])
    more = len(sources) - _LISTED_SOURCES
    if more > 0:
        listed += f" and {more} more"
    return (
        f"Search {name}, a frozen duckdb-vectors index: {report.chunk_count} chunks from"
        f" {len(sources)} documents ({listed}), embedded with {report.backend}. Hybrid search"
        " (meaning and exact words), fetch a hit in context or a whole document; read-only,"
        " no network."
    )


def _libraries(held: list[libraries.LibraryInfo]) -> str:
    """``ray 2.9/2.10, duckdb``."""
    named = []
    for info in held:
        versions = "/".join(version.version for version in info.versions if version.version)
        named.append(f"{info.name} {versions}" if versions else info.name)
    return ", ".join(named)


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as the catalog lists it: name, description, annotations (with its title)."""
    given = tool.get("annotations") or {}
    annotations: dict[str, Any] = {}
    title = tool.get("title") or given.get("title")
    if title:
        annotations["title"] = title
    annotations |= {hint: given[hint] for hint in _ANNOTATION_HINTS if given.get(hint) is not None}
    described = {"name": tool["name"], "description": tool.get("description") or ""}
    return described | ({"annotations": annotations} if annotations else {})


class _Dumper(yaml.SafeDumper):
    """Literal blocks for multi-line strings (tool descriptions), plain YAML otherwise."""


def _string(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _string)
