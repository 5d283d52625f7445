"""index_folder on real folders: Markdown, PDF and text, incremental, and safe on bad input."""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import textwrap
from pathlib import Path

import pytest
from conftest import DEFAULT_BACKEND, DUCKDB_DOCS, EVALDATA, STATIC_MODEL, start_killed_run

from duckdb_vectors import VectorStore, chunkers, index_folder
from duckdb_vectors.chunkers import default_chunker
from duckdb_vectors.chunkers.pdf import NO_TEXT_LAYER
from duckdb_vectors.document_chunks import FolderChunks
from duckdb_vectors.errors import SkipFile

PDFS = EVALDATA / "pdfs"


def open_store(path: Path, **options) -> VectorStore:
    return VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL, **options)


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    write(
        folder,
        "guide.md",
        """\
        # Guide

        ## Install

        Run the installer on your machine.

        ## Retries

        Failed requests are retried three times.

        ## Limits

        At most 100 requests per minute.
        """,
    )
    write(folder, "faq/auth.md", "# Auth\n\nEvery call needs an API key.\n")
    write(folder, "notes.txt", "Plain notes about error E1234.\n\nA second paragraph.\n")
    return folder


@pytest.mark.slow
def test_the_duckdb_documentation_folder(tmp_path: Path) -> None:
    with open_store(tmp_path / "docs.duckdb") as store:
        first = index_folder(store, DUCKDB_DOCS)
        assert first.files_seen == 425
        assert first.files_new + len(first.skipped) == 425 and not first.failed
        assert {p.reason for p in first.skipped} == {"no text to index"}  # front matter only
        assert first.chunks_embedded == first.chunks_added == store.count() > 5000
        hits = store.query("how do I read a parquet file?", top_k=3)
        assert any("parquet" in hit.chunk.source for hit in hits)
        assert hits[0].chunk.title and " > " in hits[0].chunk.title

        second = index_folder(store, DUCKDB_DOCS)
        assert second.chunks_embedded == 0 and second.chunks_pruned == 0
        assert second.files_unchanged == first.files_new
        assert store.manifest.content_hash == store.manifest.content_hash


@pytest.mark.slow
def test_pdfs_are_indexed_and_unindexable_ones_reported(tmp_path: Path) -> None:
    folder = tmp_path / "pdfs"
    shutil.copytree(PDFS, folder)
    with open_store(tmp_path / "pdfs.duckdb") as store:
        summary = index_folder(store, folder)
        reasons = {p.source: p.reason for p in summary.skipped + summary.failed}
        indexed = set(store.sources())
    text_pdfs = {f"text/{p.name}" for p in (PDFS / "text").glob("*.pdf")}
    assert text_pdfs <= indexed
    for pdf in (PDFS / "scanned").glob("*.pdf"):
        source = f"scanned/{pdf.name}"
        if source in indexed:  # a scan with a little real text: indexed, with a warning
            assert any(source in warning for warning in summary.warnings)
        else:
            assert reasons[source] == NO_TEXT_LAYER
    assert reasons["edge/invalid.pdf"].startswith("not a readable PDF")
    assert "encrypted" in reasons["edge/libreoffice-writer-password.pdf"]
    assert reasons["edge/vector.pdf"] == NO_TEXT_LAYER
    assert reasons["edge/no_contents.pdf"] == NO_TEXT_LAYER
    assert "unreadable" in reasons["edge/truetype_font_nomapping.pdf"]
    assert "edge/missing_docinfo.pdf" in indexed
    assert "SKIP" not in reasons.values()


def test_a_second_run_over_an_unchanged_folder_embeds_nothing(docs: Path, db_path: Path) -> None:
    with open_store(db_path) as store:
        first = index_folder(store, docs)
        hash_after_first = store.manifest.content_hash
        second = index_folder(store, docs)
        assert (first.files_new, first.chunks_added) == (3, store.count())
        assert (second.files_unchanged, second.chunks_embedded, second.chunks_pruned) == (3, 0, 0)
        assert store.manifest.content_hash == hash_after_first


@pytest.mark.slow
def test_editing_a_file_re_embeds_only_its_changed_chunks(docs: Path, db_path: Path) -> None:
    with open_store(db_path) as store:
        index_folder(store, docs)
        guide = docs / "guide.md"
        guide.write_text(guide.read_text().replace("three times", "five times"))
        summary = index_folder(store, docs)
        assert (summary.files_changed, summary.files_unchanged) == (1, 2)
        assert (summary.chunks_updated, summary.chunks_embedded) == (1, 1)
        assert store.query("how many retries", top_k=1)[0].chunk.text.endswith("five times.")


@pytest.mark.parametrize("change", ["settings", "version"])
def test_a_new_chunker_re_chunks_every_file_but_embeds_only_new_text(
    docs: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    with open_store(db_path) as store:
        index_folder(store, docs)
        if change == "version":  # a release whose chunkers cut the same files differently
            monkeypatch.setattr(chunkers, "CHUNKING_VERSION", chunkers.CHUNKING_VERSION + 1)
            summary = index_folder(store, docs)
            assert summary.chunks_embedded == 0  # same chunks: every vector is reused
        else:
            summary = index_folder(store, docs, chunker=default_chunker(max_chars=30))
            assert summary.chunks_unchanged > 0  # a short paragraph that fits either way
            assert summary.chunks_embedded == summary.chunks_added + summary.chunks_updated
        assert (summary.files_changed, summary.files_unchanged) == (3, 0)


def test_a_re_index_counts_the_vectors_it_reuses(docs: Path, db_path: Path, tmp_path: Path) -> None:
    """Every chunk the source holds after a run is either embedded or reused: a first run
    embeds all; after one paragraph changed, that chunk alone is embedded; a copy of the
    folder (new files, as a build's COPY makes: each is read and hashed) embeds nothing."""
    with open_store(db_path) as store:
        first = index_folder(store, docs)
        assert (first.chunks_embedded, first.chunks_reused) == (store.count(), 0)

        guide = docs / "guide.md"
        guide.write_text(guide.read_text().replace("three times", "five times"))
        (docs / "notes.txt").rename(docs / "renamed.txt")  # new ids, known texts
        edited = index_folder(store, docs)
        assert (edited.chunks_embedded, edited.chunks_reused) == (1, store.count() - 1)
        assert edited.chunks_added == 1  # the renamed file's chunk: written, not embedded

        copy = tmp_path / "copy"
        shutil.copytree(docs, copy)
        copied = index_folder(store, copy)
        assert (copied.files_read, copied.files_unchanged) == (3, 3)
        assert (copied.chunks_embedded, copied.chunks_reused) == (0, store.count())


def test_deleting_a_file_removes_its_chunks(docs: Path, db_path: Path) -> None:
    with open_store(db_path) as store:
        index_folder(store, docs)
        (docs / "faq" / "auth.md").unlink()
        summary = index_folder(store, docs)
        assert summary.chunks_pruned == 1
        assert "faq/auth.md" not in store.sources()


def test_chunks_deleted_through_the_api_come_back_on_the_next_run(
    docs: Path, db_path: Path
) -> None:
    """Deleting a file's chunks also forgets the file, so indexing restores it."""
    recorded = "SELECT source FROM documents ORDER BY source"
    with open_store(db_path) as store:
        index_folder(store, docs)
        store.delete_vectors(["faq/auth.md#0"])
        assert ("faq/auth.md",) not in store.connection.execute(recorded).fetchall()
        store.delete_where(where="source = 'notes.txt'")
        assert store.connection.execute(recorded).fetchall() == [("guide.md",)]
        summary = index_folder(store, docs)
        assert (summary.files_new, summary.files_unchanged) == (2, 1)
        assert set(store.sources()) == {"guide.md", "faq/auth.md", "notes.txt"}


def test_a_file_that_got_shorter_loses_its_tail_chunks(docs: Path, db_path: Path) -> None:
    with open_store(db_path) as store:
        index_folder(store, docs)
        before = store.sources()["guide.md"]
        guide = docs / "guide.md"
        guide.write_text(guide.read_text().split("## Limits")[0])
        summary = index_folder(store, docs)
        assert store.sources()["guide.md"] == before - 1 == summary.chunks_unchanged
        assert summary.chunks_pruned == 1
        assert not store.get_vectors([f"guide.md#{before - 1}"])


def test_a_renamed_file_reuses_its_vectors(docs: Path, db_path: Path) -> None:
    with open_store(db_path) as store:
        index_folder(store, docs)
        (docs / "notes.txt").rename(docs / "renamed.txt")
        summary = index_folder(store, docs)
        assert summary.files_new == 1 and summary.chunks_added == summary.chunks_pruned == 1
        assert summary.chunks_embedded == 0


def test_bad_input_is_reported_once_and_never_stops_the_run(
    docs: Path, db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (docs / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    (docs / "latin1.txt").write_bytes("café crème".encode("latin-1"))
    (docs / "empty.md").write_text("")
    (docs / "huge.txt").write_text("word " * 20_000)
    (docs / "loop").symlink_to(docs, target_is_directory=True)
    (docs / "self.md").symlink_to(docs / "self.md")
    (docs / "dangling.md").symlink_to(docs / "missing.md")
    (docs / "passwd.txt").symlink_to("/etc/passwd")
    os.mkfifo(docs / "pipe.txt")
    write(docs, ".hidden/secret.md", "# Secret\n\nnot for the index\n")
    with open_store(db_path) as store:
        summary = index_folder(store, docs, max_file_bytes=50_000)
        problems = {p.source: p.reason for p in summary.skipped + summary.failed}
        assert set(store.sources()) == {"guide.md", "faq/auth.md", "notes.txt"}
    assert problems == {
        "image.md": "binary file (application/octet-stream)",
        "latin1.txt": "not valid UTF-8 (at byte 3); convert it to UTF-8",
        "empty.md": "no text to index",
        "huge.txt": problems["huge.txt"],
        "self.md": "broken symlink or symlink loop",
        "dangling.md": "broken symlink or symlink loop",
        "passwd.txt": "symlink points outside the folder (not followed)",
        "pipe.txt": "not a regular file",
    }
    assert problems["huge.txt"].startswith("larger than the 0.05 MB limit")
    assert len(summary.skipped + summary.failed) == len(problems)  # each reported once
    logged = [r.getMessage() for r in caplog.records if r.name == "duckdb_vectors.indexer"]
    assert len(logged) == len(problems)


def test_a_file_that_vanishes_during_the_run(docs: Path, db_path: Path) -> None:
    composite = default_chunker()

    class DeletesNotes:
        """Chunks normally, but deleting notes.txt while faq/auth.md is being chunked."""

        def chunk_bytes(self, data: bytes, source: str):
            if source == "faq/auth.md":
                (docs / "notes.txt").unlink()
            return composite.chunk_bytes(data, source)

    with open_store(db_path) as store:
        summary = index_folder(store, docs, chunker=DeletesNotes())
        assert [(p.source, p.reason) for p in summary.failed] == [
            ("notes.txt", "vanished while indexing")
        ]
        assert set(store.sources()) == {"guide.md", "faq/auth.md"}


def test_include_exclude_and_hidden(docs: Path, db_path: Path) -> None:
    write(docs, ".drafts/wip.md", "# WIP\n\ndraft\n")
    with open_store(db_path) as store:
        index_folder(store, docs, include=["*.md"], exclude=["faq/*"])
        assert set(store.sources()) == {"guide.md"}
        index_folder(store, docs, include_hidden=True, include=["*.md"])
        assert set(store.sources()) == {"guide.md", "faq/auth.md", ".drafts/wip.md"}
        index_folder(store, docs, recursive=False)
        assert set(store.sources()) == {"guide.md", "notes.txt"}


def test_include_and_exclude_are_gitignore_patterns(docs: Path, db_path: Path) -> None:
    write(docs, "api/v1/deep/endpoints.md", "# Endpoints\n\nGET /items\n")
    write(docs, "api/v1/changes.md", "# Changes\n\nWhat changed.\n")
    write(docs, "api/index.md", "# API\n\nThe API.\n")
    with open_store(db_path) as store:
        index_folder(store, docs, include=["api/**/*.md"])  # ** crosses folders, under api/
        assert set(store.sources()) == {
            "api/v1/deep/endpoints.md",
            "api/v1/changes.md",
            "api/index.md",
        }
        index_folder(store, docs, include=["*.md"], exclude=["api/**", "!api/index.md"])
        assert set(store.sources()) == {"guide.md", "faq/auth.md", "api/index.md"}
        index_folder(store, docs, exclude=["/guide.md", "**/deep/"])  # anchored; any depth
        assert "guide.md" not in store.sources()
        assert "api/v1/deep/endpoints.md" not in store.sources()
        assert "api/v1/changes.md" in store.sources()


def a_docs_site(docs: Path) -> Path:
    """A documentation tree as projects publish it: sources beside build output and assets."""
    write(docs, "_static/app.js", "function search() { return 'retries'; }\n")
    write(docs, "_static/theme.css", "body { font-family: serif; }\n")
    write(docs, "img/diagram.svg", "<svg><text>retries diagram</text></svg>\n")
    write(docs, "_build/html/guide.txt", "Failed requests are retried three times.\n")
    write(docs, "html/_sources/guide.rst.txt", "Guide\n=====\n\nRetries, as a Sphinx source.\n")
    write(docs, "html/search/search_index.json", '{"docs": [{"text": "retries"}]}\n')
    write(docs, "html/sitemap.xml", "<urlset><url><loc>guide.html</loc></url></urlset>\n")
    write(docs, "node_modules/pkg/README.md", "# pkg\n\nA dependency's readme.\n")
    write(docs, "site/index.txt", "MkDocs output about retries.\n")
    write(docs, ".gitignore", "drafts/\n*.tmp.md\n")
    write(docs, "drafts/wip.md", "# WIP\n\nAn unfinished page.\n")
    write(docs, "faq/old.tmp.md", "# Old\n\nA scratch page.\n")
    write(docs, ".duckdb-vectors-ignore", "faq/internal.md\n")
    write(docs, "faq/internal.md", "# Internal\n\nNot for the index.\n")
    return docs


def test_build_output_assets_and_ignored_files_are_left_out(docs: Path, db_path: Path) -> None:
    with open_store(db_path) as store:
        index_folder(store, a_docs_site(docs))
        assert set(store.sources()) == {"guide.md", "faq/auth.md", "notes.txt"}
        index_folder(store, docs, include=["_static/*.js", "*.md"], exclude=["faq/*"])
        assert set(store.sources()) == {
            "_static/app.js",
            "guide.md",
            "drafts/wip.md",
            "node_modules/pkg/README.md",
        }


def test_folder_chunks_are_what_index_writes(docs: Path, db_path: Path) -> None:
    """A job that embeds elsewhere (examples/ray_embed_to_parquet.py, on Ray workers) cuts a
    folder with FolderChunks: the files, chunks, links and reasons for skipping are index's."""
    a_docs_site(docs)
    write(docs, "faq/links.md", "# Links\n\nRetry as [the guide](../guide.md#retries) says.\n")
    write(docs, "LICENSE", "Permission is granted, free of charge.\n")
    (docs / "empty.md").write_text("")
    (docs / "passwd.txt").symlink_to("/etc/passwd")
    folder = pickle.loads(pickle.dumps(FolderChunks.of(docs)))  # as shipped to a worker
    made, reasons = {}, dict(folder.refused)
    for file in folder.files:
        try:
            made.update({chunk.chunk_id: chunk for chunk in folder.chunks(file)})
        except SkipFile as reason:
            reasons[file] = str(reason)
    with open_store(db_path) as store:
        summary = index_folder(store, docs)
        written = {chunk.chunk_id: chunk for chunk in store.list_vectors(limit=1000)}
    assert reasons == {p.source: p.reason for p in summary.skipped + summary.failed}
    fields = ("text", "title", "source", "position", "metadata")
    assert {key: [getattr(made[key], name) for name in fields] for key in made} == {
        key: [getattr(written[key], name) for name in fields] for key in written
    }
    assert "[the guide](guide.md)" in made["faq/links.md#0"].text  # the link index rewrites
    assert "LICENSE#0" in made


def test_folders_with_prefixes_share_an_index(docs: Path, tmp_path: Path, db_path: Path) -> None:
    skills = tmp_path / "skills"
    write(skills, "deploy.md", "# Deploy\n\nShip it with the deploy tool.\n")
    with open_store(db_path) as store:
        index_folder(store, docs, source_prefix="docs/")
        index_folder(store, skills, source_prefix="skills/")
        index_folder(store, docs, source_prefix="docs/")  # must not prune the skills
        assert "skills/deploy.md" in store.sources()
        assert store.query("deploy tool", top_k=1)[0].chunk.source == "skills/deploy.md"


def test_ctrl_c_midway_leaves_the_previous_index(docs: Path, db_path: Path) -> None:
    composite = default_chunker()

    class Interrupted:
        def chunk_bytes(self, data: bytes, source: str):
            if source == "notes.txt":
                raise KeyboardInterrupt
            return composite.chunk_bytes(data, source)

    with open_store(db_path) as store:
        index_folder(store, docs, include=["guide.md"])
        before = (store.count(), store.manifest.content_hash)
        (docs / "guide.md").write_text("# Guide\n\nall new text\n")
        with pytest.raises(KeyboardInterrupt):
            index_folder(store, docs, chunker=Interrupted())
        assert (store.count(), store.manifest.content_hash) == before
        assert "retried three times" in store.query("retries", top_k=1)[0].chunk.text


@pytest.mark.slow
def test_killing_the_indexer_midway_keeps_the_old_index(docs: Path, tmp_path: Path) -> None:
    db_path = tmp_path / "killed.duckdb"
    with open_store(db_path) as store:
        index_folder(store, docs)
        before = (store.count(), store.manifest.content_hash)
    process = start_killed_run(db_path, DUCKDB_DOCS, tmp_path / "midway", midway=60)
    process.send_signal(signal.SIGKILL)
    process.wait()

    with open_store(db_path, read_only=True) as reopened:
        assert (reopened.count(), reopened.manifest.content_hash) == before
        assert reopened.query("retries", top_k=1)[0].chunk.source == "guide.md"
    with open_store(db_path) as store:
        completed = index_folder(store, DUCKDB_DOCS)
        assert completed.chunks_pruned == before[0]  # the old folder's chunks
        resumed_hash = store.manifest.content_hash
    with open_store(tmp_path / "fresh.duckdb") as fresh:
        index_folder(fresh, DUCKDB_DOCS)
        assert fresh.manifest.content_hash == resumed_hash


def test_progress_bar_only_when_asked_or_on_a_terminal(docs: Path, db_path: Path, capsys) -> None:
    with open_store(db_path) as store:
        index_folder(store, docs)
        assert capsys.readouterr().err == ""
        index_folder(store, docs, progress=True)
        assert "indexing" in capsys.readouterr().err


def test_a_missing_folder_is_a_clear_error(db_path: Path, tmp_path: Path) -> None:
    from duckdb_vectors import DuckDBVectorsError

    with open_store(db_path) as store, pytest.raises(DuckDBVectorsError, match="is not a folder"):
        index_folder(store, tmp_path / "nope")
