"""Links between indexed pages are rewritten so a reader (or ``fetch``) can follow them."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import DEFAULT_BACKEND, DUCKDB_DOCS, STATIC_MODEL

from duckdb_vectors import UrlRule, VectorStore, index_folder
from duckdb_vectors.fetching import fetch
from duckdb_vectors.links import Pages, fingerprint

PAGES = Pages(["guide/install.md", "guide/index.md", "api/types.rst", "faq.md", "a/x.md", "b/x.md"])


@pytest.mark.parametrize(
    ("target", "page", "found"),
    [
        ("install.md", "guide/index.md", "guide/install.md"),  # relative to the page
        ("../faq.md", "guide/install.md", "faq.md"),
        ("/faq.md", "guide/install.md", "faq.md"),  # relative to the folder
        ("docs/current/guide/install.md", "faq.md", "guide/install.md"),  # to a site root above
        ("install.html", "guide/index.md", "guide/install.md"),  # the built page
        ("../api/types.html", "guide/install.md", "api/types.rst"),
        ("install/", "guide/index.md", "guide/install.md"),  # a pretty URL
        ("../guide/", "faq.md", "guide/index.md"),
        ("x.md", "faq.md", None),  # a/x.md or b/x.md: not one page
        ("missing.md", "faq.md", None),
        ("install.pdf", "guide/index.md", None),
    ],
)
def test_a_link_finds_the_page_it_names(target: str, page: str, found: str | None) -> None:
    assert PAGES.find(target, page) == found


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """Two real DuckDB docs pages (Jekyll {% link %} tags to each other) and one of ours."""
    folder = tmp_path / "docs"
    for name in ("overview.md", "connect.md"):
        target = folder / "current" / "clients" / "c" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DUCKDB_DOCS / "clients" / "c" / name, target)
    (folder / "index.md").write_text(
        "# Start\n\nRead [the C API](current/clients/c/overview.md#installation), the"
        " [site](https://duckdb.org/), [this page](#start) or [a missing one](gone.md).\n"
    )
    return folder


def links_of(store: VectorStore, source: str) -> list[str]:
    return [
        target
        for chunk in store.document(source)
        for target in re.findall(r"\]\(([^)\s]+)\)", chunk.text)
    ]


def test_with_a_base_url_a_link_to_an_indexed_page_is_its_citation(
    docs: Path, db_path: Path
) -> None:
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, docs, urls=UrlRule("https://duckdb.org/docs/", "pretty"))
        overview = links_of(store, "current/clients/c/overview.md")
        start = links_of(store, "index.md")
    # {% link docs/current/clients/c/connect.md %} in the source, a path from the site's root
    assert "https://duckdb.org/docs/current/clients/c/connect/" in overview
    assert "docs/current/clients/c/connect.md" not in overview
    assert "docs/current/clients/c/api.md" in overview  # a page this run does not index
    assert start == [
        "https://duckdb.org/docs/current/clients/c/overview/#installation",
        "https://duckdb.org/",
        "#start",
        "gone.md",
    ]


def test_without_a_base_url_a_link_is_the_source_id_fetch_reads(docs: Path, db_path: Path) -> None:
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, docs, source_prefix="duckdb/")
        start = links_of(store, "duckdb/index.md")
        assert start[0] == "duckdb/current/clients/c/overview.md"
        assert "duckdb/current/clients/c/connect.md" in links_of(
            store, "duckdb/current/clients/c/overview.md"
        )
        followed = fetch(store, start[0])
    assert "DuckDB C API" in followed.as_text()


def test_a_page_added_later_makes_the_links_to_it_followable(tmp_path: Path, db_path: Path) -> None:
    """An unchanged page's chunks are made again when a page its links name appears (or goes):
    the index is then what a run over the whole folder at once makes."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Start\n\nRead [the guide](guide.md) first.\n")
    rule = UrlRule("https://docs.example.com/")
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, docs, urls=rule)
        assert links_of(store, "index.md") == ["guide.md"]  # no such page yet: as written
        (docs / "guide.md").write_text("# Guide\n\nHow to start.\n")
        added = index_folder(store, docs, urls=rule)
        assert links_of(store, "index.md") == ["https://docs.example.com/guide.html"]
        assert (added.files_new, added.files_changed) == (1, 1)  # index.md, for its link
        (docs / "guide.md").unlink()
        index_folder(store, docs, urls=rule)
        assert links_of(store, "index.md") == ["guide.md"]
        assert index_folder(store, docs, urls=rule).files_unchanged == 1


@pytest.mark.parametrize(
    "source",
    [b"[a](b.md)", b"[a]({% link docs/x/b.md %})", b'{{< ref "b.md" >}}', b"[a](../x/b.md#part)"],
)
def test_the_fingerprint_follows_what_a_link_names(source: bytes) -> None:
    with_b, without = Pages(["x/a.md", "x/b.md"]), Pages(["x/a.md"])
    assert fingerprint(source, "x/a.md", with_b) != fingerprint(source, "x/a.md", without)
    assert fingerprint(b"[a](https://b.example/b.md)", "x/a.md", with_b) == fingerprint(
        b"[a](https://b.example/b.md)", "x/a.md", without
    )
