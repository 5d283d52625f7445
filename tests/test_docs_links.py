"""Every relative link of the documentation resolves: to a file, and to a heading of it.

Anchors are compared with GitHub's heading slugs, since that is where the pages are read. The
package's own messages name docs pages too (``see docs/publishing.md``); those must exist.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPOSITORY

PAGES = [
    REPOSITORY / "README.md",
    REPOSITORY / "bench" / "RESULTS.md",
    *sorted((REPOSITORY / "docs").glob("*.md")),
]
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.MULTILINE)
EXAMPLES = {"docs/x.md"}  # a Liquid tag in chunkers/templates.py's docstring, not a page


def prose(text: str) -> str:
    """The text without code blocks (whose brackets are not links)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: link text kept, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(prose(page.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    text = INLINE_CODE.sub("", prose(page.read_text(encoding="utf-8")))
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def test_the_slugs_are_githubs() -> None:
    assert slug("int8 vectors: `--quantize int8`") == "int8-vectors---quantize-int8"
    assert slug("Pages, not fragments: `one_per_source`") == "pages-not-fragments-one_per_source"
    assert slug("The Docker MCP Gateway: a self-describing image") == (
        "the-docker-mcp-gateway-a-self-describing-image"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPOSITORY)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no such heading")
    assert not broken, f"{page.name}: {broken}"


def test_the_pages_the_package_names_exist() -> None:
    named = set()
    for source in (REPOSITORY / "duckdb_vectors").rglob("*.py"):
        named |= set(re.findall(r"docs/[a-z-]+\.md(?:#[\w-]+)?", source.read_text()))
    missing = []
    for reference in sorted(named - EXAMPLES):
        path, _, anchor = reference.partition("#")
        page = REPOSITORY / path
        if not page.exists() or (anchor and anchor not in anchors(page)):
            missing.append(reference)
    assert not missing
