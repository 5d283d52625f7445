"""Hits carry the public URL of their page: from front matter, or from ``--base-url``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DEFAULT_BACKEND, DUCKDB_DOCS, STATIC_MODEL

from duckdb_vectors import InvalidUrlError, UrlRule, VectorStore, index_folder
from duckdb_vectors.cli import cli
from duckdb_vectors.rendering import SearchOutput


@pytest.mark.parametrize(
    ("style", "path", "expected"),
    [
        ("html", "guide/install.md", "https://docs.example.com/v2/guide/install.html"),
        ("html", "api/types.rst", "https://docs.example.com/v2/api/types.html"),
        ("pretty", "guide/install.md", "https://docs.example.com/v2/guide/install/"),
        ("pretty", "guide/index.md", "https://docs.example.com/v2/guide/"),
        ("pretty", "index.mdx", "https://docs.example.com/v2/"),
        ("source", "guide/install.md", "https://docs.example.com/v2/guide/install.md"),
        ("html", "papers/cidr 2020.pdf", "https://docs.example.com/v2/papers/cidr%202020.pdf"),
    ],
)
def test_a_source_path_becomes_a_page_under_the_base_url(
    style: str, path: str, expected: str
) -> None:
    rule = UrlRule("https://docs.example.com/v2", style)  # type: ignore[arg-type]
    assert rule.url(path, {}) == expected


def test_front_matter_names_the_page_in_the_order_sites_use() -> None:
    rule = UrlRule("https://duckdb.org/")
    redirects = {"redirect_from": ["/docs/data/parquet", "/docs/stable/data/parquet/overview"]}
    # Where the page used to be is not where it is: the path under the base URL is.
    assert rule.url("data/parquet/overview.md", redirects) == (
        "https://duckdb.org/data/parquet/overview.html"
    )
    both = {"slug": "/ignored", "permalink": "/docs/stable/faq"}
    assert rule.url("faq.md", both) == "https://duckdb.org/docs/stable/faq"
    absolute = {"url": "https://elsewhere.example.org/page"}
    assert UrlRule().url("x.md", absolute) == "https://elsewhere.example.org/page"
    assert UrlRule().url("x.md", {"permalink": "/docs/x"}) is None  # relative, and no base


def test_a_page_with_redirects_cites_its_own_path_under_the_base_url(
    db_path: Path, tmp_path: Path
) -> None:
    page = DUCKDB_DOCS / "sql" / "functions" / "aggregates.md"
    assert "redirect_from:" in page.read_text()
    docs = tmp_path / "docs" / "current" / "sql" / "functions"
    docs.mkdir(parents=True)
    (docs / "aggregates.md").write_bytes(page.read_bytes())
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        rule = UrlRule("https://duckdb.org/docs/", "pretty")
        index_folder(store, tmp_path / "docs", urls=rule)
        urls = {
            chunk.metadata["url"] for chunk in store.document("current/sql/functions/aggregates.md")
        }
    assert urls == {"https://duckdb.org/docs/current/sql/functions/aggregates/"}


def test_a_base_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(InvalidUrlError, match=r"--base-url 'docs\.example\.com' is not an http"):
        UrlRule("docs.example.com")


def test_index_with_a_bad_base_url_says_so_in_one_line_and_creates_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nText.\n")
    db = tmp_path / "never.duckdb"
    index = [sys.executable, "-m", "duckdb_vectors.cli", "index", str(tmp_path / "docs")]
    result = subprocess.run(
        [*index, "--db", str(db), "--base-url", "ftp://docs.example.com"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "Error: --base-url 'ftp://docs.example.com' is not an http(s) URL;"
        " give the site's address, e.g. https://docs.example.com/"
    ]
    assert not db.exists()


def test_index_records_each_pages_url_and_a_new_base_url_re_embeds_nothing(
    db_path: Path, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "guide" / "install.md").write_text("# Install\n\nRun pip install duckdb-vectors.\n")
    (docs / "faq.md").write_text("---\npermalink: /stable/faq\n---\n# FAQ\n\nWhy pip?\n")
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, docs, urls=UrlRule("https://docs.example.com/", "pretty"))
        hits = store.query_text("pip", top_k=5)
        urls = {hit.source: hit.url for hit in SearchOutput.of("pip", hits).results}
        assert urls == {
            "guide/install.md": "https://docs.example.com/guide/install/",
            "faq.md": "https://docs.example.com/stable/faq",
        }
        moved = index_folder(store, docs, urls=UrlRule("https://docs.example.org/"))
        assert moved.chunks_embedded == 0
        install = store.get_vectors(["guide/install.md#0"])[0]
        assert install.metadata["url"] == "https://docs.example.org/guide/install.html"


def test_search_prints_the_url_and_id_under_each_hit_and_fetch_cites(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text("# Install\n\nRun pip install duckdb-vectors.\n")
    db = str(tmp_path / "cited.duckdb")
    runner = CliRunner()
    env = {"DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL), "HF_HUB_OFFLINE": "1"}
    indexed = runner.invoke(
        cli, ["index", str(docs), "--db", db, "--base-url", "https://docs.example.com"], env=env
    )
    assert indexed.exit_code == 0, indexed.output
    found = runner.invoke(cli, ["search", "pip", "--db", db, "--text-only"], env=env)
    assert "   https://docs.example.com/install.html\n   chunk_id: install.md#0\n" in found.stdout
    # The id a hit shows is what fetch takes; fetch says what to cite.
    fetched = runner.invoke(cli, ["fetch", "install.md#0", "--db", db], env=env)
    assert fetched.stdout.endswith("\n\n[Cite: https://docs.example.com/install.html]\n")


def test_the_duckdb_docs_without_a_base_url_cite_nothing_from_their_redirects(
    db_path: Path,
) -> None:
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, DUCKDB_DOCS / "data" / "parquet", urls=UrlRule())
        hits = store.query("how do I read a parquet file", top_k=10)
    assert hits and all("url" not in hit.chunk.metadata for hit in hits)
