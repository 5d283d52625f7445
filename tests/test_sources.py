"""The source seam: any ``Source`` plugs into the one incremental run, and what the run records.

The source here is what a user would write to index a zip archive: it lists the archive's
members and sends each one's CRC back as its validator, so a second run reads nothing that
did not change. It is real code over a real archive: the run it drives is the product's.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import DEFAULT_BACKEND, STATIC_MODEL, run_cli

from duckdb_vectors import (
    InvalidSourceError,
    Source,
    SourceRecord,
    VectorStore,
    index_source,
    open_source,
)
from duckdb_vectors.sources import Entry, Fetched, Validators


class ZipSource(Source):
    kind = "zip"

    @classmethod
    def matches(cls, location: str) -> bool:
        return location.endswith(".zip")

    def list(self, previous: Mapping[str, Validators]) -> list[Entry]:
        with zipfile.ZipFile(self.location) as archive:
            self.crcs = {i.filename: str(i.CRC) for i in archive.infolist() if not i.is_dir()}
        return [Entry(name) for name in sorted(self.crcs)]

    def read(
        self, entries: Sequence[Entry], previous: Mapping[str, Validators]
    ) -> Iterator[Fetched]:
        self.sent = []
        with zipfile.ZipFile(self.location) as archive:
            for entry in entries:
                validators = {"crc": self.crcs[entry.source]}
                if previous.get(entry.source) == validators:
                    yield Fetched(entry.source, unchanged=True, validators=validators)
                    continue
                self.sent.append(entry.source)
                data = archive.read(entry.source)
                yield Fetched(entry.source, data=data, validators=validators)

    def record(self) -> SourceRecord:
        return SourceRecord(kind=self.kind, location=self.location, fetched_at=datetime.now(UTC))


def write_archive(path: Path, members: Mapping[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return path


PAGES = {
    "guide/install.md": "# Install\n\nRun the installer, then see [retries](../retries.md).\n",
    "retries.md": "# Retries\n\nFailed requests are retried three times, with backoff.\n",
    "limits.md": "# Limits\n\nAt most 100 requests per minute per key.\n",
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[VectorStore]:
    with VectorStore(tmp_path / "zip.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        yield store


def test_a_source_of_another_kind_plugs_into_the_run(tmp_path: Path, store: VectorStore) -> None:
    archive = write_archive(tmp_path / "docs.zip", PAGES)
    first = index_source(store, ZipSource(str(archive), open_source(".").options))
    assert (first.kind, first.files_new, first.files_read) == ("zip", 3, 3)
    hits = store.query("how often are requests retried?", top_k=1)
    assert hits[0].chunk.source == "retries.md"
    # A link between two of its documents is rewritten to the linked document's id.
    (install,) = store.document("guide/install.md")
    assert "](retries.md)" in install.text

    again = ZipSource(str(archive), open_source(".").options)
    second = index_source(store, again)
    assert again.sent == [] and second.files_read == 0
    assert (second.files_unchanged, second.chunks_embedded, second.chunks_pruned) == (3, 0, 0)

    write_archive(archive, {**PAGES, "limits.md": "# Limits\n\nAt most 50 requests a minute.\n"})
    changed = ZipSource(str(archive), open_source(".").options)
    third = index_source(store, changed)
    assert changed.sent == ["limits.md"]
    assert (third.files_changed, third.files_unchanged) == (1, 2)
    assert third.chunks_embedded == 1


def test_a_document_added_elsewhere_has_every_document_read_again(
    tmp_path: Path, store: VectorStore
) -> None:
    # A new page may be the target of another page's link, so validators are not trusted.
    archive = write_archive(tmp_path / "docs.zip", PAGES)
    index_source(store, ZipSource(str(archive), open_source(".").options))
    write_archive(archive, {**PAGES, "auth.md": "# Auth\n\nEvery call needs a key.\n"})
    grown = ZipSource(str(archive), open_source(".").options)
    summary = index_source(store, grown)
    assert sorted(grown.sent) == sorted([*PAGES, "auth.md"])
    assert (summary.files_new, summary.files_unchanged, summary.chunks_embedded) == (1, 3, 1)


def test_a_document_nothing_indexes_leaves_the_others_confirmed(
    tmp_path: Path, store: VectorStore
) -> None:
    """A listed page that is never stored (an image, a page with no text) lists again as it
    did last run: the listing matches the recorded one, so the others are not read again."""
    archive = write_archive(tmp_path / "docs.zip", {**PAGES, "logo.png": "\x89PNG\r\n\x1a\n"})
    index_source(store, ZipSource(str(archive), open_source(".").options))
    again = ZipSource(str(archive), open_source(".").options)
    summary = index_source(store, again)
    assert again.sent == ["logo.png"] and summary.files_unchanged == 3
    assert [problem.source for problem in summary.skipped] == ["logo.png"]


def test_the_manifest_records_each_source_by_its_prefix(tmp_path: Path, store: VectorStore) -> None:
    archive = write_archive(tmp_path / "docs.zip", PAGES)
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Notes\n\nA note about quotas.\n")
    index_source(store, ZipSource(str(archive), open_source(".").options), source_prefix="zip/")
    index_source(store, str(folder), source_prefix="notes/")
    recorded = {record.prefix: record for record in store.manifest.sources}
    assert recorded["zip/"].kind == "zip" and recorded["zip/"].documents == 3
    assert recorded["notes/"].kind == "folder" and recorded["notes/"].location == str(folder)
    assert recorded["notes/"].read == recorded["notes/"].documents == 1


def test_a_source_nothing_reads_is_one_line_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InvalidSourceError, match=r"ftp://example\.com/docs is not a folder"):
        open_source("ftp://example.com/docs")
    result = run_cli("index", "ftp://example.com/docs", "--db", str(tmp_path / "x.duckdb"))
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ftp://example.com/docs is not a folder, a git+https")
    assert not (tmp_path / "x.duckdb").exists()


def test_a_header_option_must_name_a_header(tmp_path: Path) -> None:
    result = run_cli("index", str(tmp_path), "--header", "no-colon", "--db", str(tmp_path / "x"))
    assert result.exit_code == 2 and "'no-colon' is not NAME:VALUE" in result.stderr


def test_a_folder_confirms_unchanged_files_without_reading_them(
    tmp_path: Path, store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in PAGES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    first = index_source(store, str(folder))
    assert first.files_read == 3
    # Files written just now are read again: a second write in the same clock tick would
    # leave their stat as it was.
    assert index_source(store, str(folder)).files_read == 3
    monkeypatch.setattr("duckdb_vectors.sources.folder.RACY_SECONDS", 0.0)
    index_source(store, str(folder))  # their stat is recorded now that it counts
    settled = index_source(store, str(folder))
    assert (settled.files_read, settled.files_unchanged, settled.chunks_embedded) == (0, 3, 0)

    # Rewritten with the same size and its old modification time put back (cp -p, rsync -t):
    # the change time still moves, so the file is read and its new text embedded.
    limits = folder / "limits.md"
    before = limits.stat()
    limits.write_text(PAGES["limits.md"].replace("100", "200"))
    os.utime(limits, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert limits.stat().st_size == before.st_size
    changed = index_source(store, str(folder))
    assert (changed.files_read, changed.files_changed, changed.chunks_embedded) == (1, 1, 1)
    (hit,) = store.query("requests per minute per key", top_k=1)
    assert "200 requests" in hit.chunk.text
