"""Slices: several versions of a document set in one index (``index --set KEY=VALUE``)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from conftest import DEFAULT_BACKEND, STATIC_MODEL, run_cli

from duckdb_vectors import SliceError, VectorStore, index_folder
from duckdb_vectors.index.slices import LIBRARY_KEY, library_of, library_sql


def _docs(root: Path, version: str) -> Path:
    """A small docs tree whose texts name their version; the same file names in every one."""
    folder = root / f"docs-{version}"
    (folder / "guide").mkdir(parents=True)
    (folder / "guide" / "install.md").write_text(
        f"# Install\n\nInstall release {version} with pip install duckdb-vectors.\n"
    )
    (folder / "retries.md").write_text(
        f"# Retries\n\nIn release {version} failed requests are retried with backoff.\n"
    )
    return folder


def _open(path: Path) -> VectorStore:
    return VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL)


def test_two_slices_share_an_index_and_reindexing_one_prunes_only_it(tmp_path: Path) -> None:
    db = tmp_path / "docs.duckdb"
    old, new = _docs(tmp_path, "1.0"), _docs(tmp_path, "2.0")
    with _open(db) as store:
        index_folder(store, old, metadata={"version": "1.0"})
        index_folder(store, new, metadata={"version": "2.0"})
        assert sorted(store.sources()) == [
            "1.0/guide/install.md",
            "1.0/retries.md",
            "2.0/guide/install.md",
            "2.0/retries.md",
        ]
        (new / "retries.md").unlink()
        again = index_folder(store, new, metadata={"version": "2.0"})
        assert again.chunks_pruned == 1 and again.files_unchanged == 1
        assert sorted(store.sources()) == [
            "1.0/guide/install.md",
            "1.0/retries.md",
            "2.0/guide/install.md",
        ]
        for version in ("1.0", "2.0"):
            hits = store.query("retried with backoff", 5, filter={"version": version})
            assert hits and {hit.chunk.metadata["version"] for hit in hits} == {version}
            assert all(hit.chunk.source.startswith(f"{version}/") for hit in hits)
        manifest = store.manifest
    assert manifest is not None and manifest.slice_keys == ["version"]
    assert [(s.metadata, s.chunk_count) for s in manifest.slices] == [
        ({"version": "1.0"}, 2),
        ({"version": "2.0"}, 1),
    ]


def test_changing_a_slices_values_restamps_without_re_embedding(tmp_path: Path) -> None:
    docs = _docs(tmp_path, "2.0")
    with _open(tmp_path / "docs.duckdb") as store:
        index_folder(store, docs, source_prefix="v2/", metadata={"version": "2.0"})
        relabelled = index_folder(
            store, docs, source_prefix="v2/", metadata={"version": "2.0", "lang": "en"}
        )
        assert relabelled.chunks_embedded == 0 and relabelled.files_changed == 2
        assert {c.metadata["lang"] for c in store.document("v2/retries.md")} == {"en"}
        assert store.manifest is not None and store.manifest.slice_keys == ["lang", "version"]


def test_a_run_that_would_prune_another_slice_is_refused(tmp_path: Path) -> None:
    with _open(tmp_path / "docs.duckdb") as store:
        index_folder(store, _docs(tmp_path, "1.0"), metadata={"version": "1.0"})
        before = store.count()
        with pytest.raises(SliceError, match=r"slice version=2.0: source prefix '1.0/' holds"):
            index_folder(
                store, _docs(tmp_path, "2.0"), source_prefix="1.0/", metadata={"version": "2.0"}
            )
        # Without --set, the whole index is the run's scope: it holds a slice.
        with pytest.raises(SliceError, match=r"a run without --set: source prefix ''"):
            index_folder(store, _docs(tmp_path, "3.0"))
        assert store.count() == before
        with pytest.raises(SliceError, match="reserved for citations"):
            index_folder(store, _docs(tmp_path, "4.0"), metadata={"url": "x"})


@pytest.mark.slow
def test_cli_set_stamps_a_slice_that_report_and_filters_show(tmp_path: Path) -> None:
    db = str(tmp_path / "docs.duckdb")
    for version in ("1.0", "2.0"):
        docs = str(_docs(tmp_path, version))
        result = run_cli("index", docs, "--db", db, "--set", f"version={version}", "--json")
        assert result.exit_code == 0, result.stderr
    report = json.loads(run_cli("report", "--db", db, "--json").stdout)
    assert report["manifest"]["slice_keys"] == ["version"]
    assert report["manifest"]["slices"] == [
        {"metadata": {"version": "1.0"}, "chunk_count": 2},
        {"metadata": {"version": "2.0"}, "chunk_count": 2},
    ]
    text = run_cli("report", "--db", db).stdout
    assert "slices      2 by version" in text and "2  version=2.0" in text
    found = run_cli("search", "install", "--db", db, "--filter", '{"version": "1.0"}', "--json")
    hits = json.loads(found.stdout)["results"]
    assert hits and {hit["source"].split("/")[0] for hit in hits} == {"1.0"}


@pytest.mark.parametrize("assignment", ["version", "=2.0", "version="])
def test_a_malformed_set_is_a_one_line_usage_error(tmp_path: Path, assignment: str) -> None:
    result = run_cli("index", str(tmp_path), "--set", assignment)
    assert result.exit_code == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: Invalid value for '--set'") and "KEY=VALUE" in last


@pytest.mark.parametrize(
    "metadata",
    [
        {},
        {"library": "ray"},
        {"library": "ray", "version": "2.9"},
        {"version": "2.9"},
        {"library": "ray", "version": None},
        {"library": 5, "version": 2.5},
        {"library": True, "version": "x'y"},
    ],
)
def test_a_chunk_s_library_reads_the_same_in_python_and_in_sql(metadata: dict) -> None:
    """Writes choose a chunk's language by ``library_of``, searches by ``library_sql``."""
    with duckdb.connect() as connection:
        in_sql = connection.execute(
            f"SELECT {library_sql([LIBRARY_KEY], '$1::JSON')}", [json.dumps(metadata)]
        ).fetchone()
    assert in_sql == (library_of(metadata),)
