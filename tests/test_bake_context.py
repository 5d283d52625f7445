"""The build context `bake` sends to the engine, read back as the tar it is (no engine needed)."""

from __future__ import annotations

import tarfile
from pathlib import Path

from conftest import DEFAULT_BACKEND, REPOSITORY, STATIC_MODEL
from test_indexer import a_docs_site, write

from duckdb_vectors import Manifest, VectorStore, index_folder
from duckdb_vectors.container.context import write_context
from duckdb_vectors.container.labels import manifest_from_labels, manifest_labels


def members(docs: Path, model: Path | None = None) -> dict[str, tarfile.TarInfo]:
    context = write_context(docs, model)
    try:
        with tarfile.open(fileobj=context.archive) as tar:
            return {member.name: member for member in tar.getmembers()}
    finally:
        context.close()


def test_the_context_has_the_shape_of_a_checkout(tmp_path: Path) -> None:
    docs = tmp_path / "my docs"
    write(docs, "guide.md", "# Guide\n\nText.\n")
    names = members(docs, STATIC_MODEL)
    for name in ("Dockerfile.runtime", "Dockerfile.builder", "pyproject.toml", "README.md"):
        assert name in names
    assert "duckdb_vectors/container/install-toolkit.sh" in names
    assert "input/docs/guide.md" in names
    assert {f"input/model/{p.name}" for p in STATIC_MODEL.iterdir()} <= set(names)
    assert not any(name.endswith(".pyc") or "__pycache__" in name for name in names)
    assert not any(name.endswith(".so") for name in names)  # no build of this machine's


def test_the_same_files_give_the_same_context(tmp_path: Path) -> None:
    """Fixed owners and times: the engine's cache sees the toolkit's files unchanged."""
    docs = tmp_path / "docs"
    write(docs, "guide.md", "# Guide\n\nText.\n")
    entries = members(docs)
    assert {(m.mtime, m.uid, m.gid, m.uname) for m in entries.values()} == {(0, 0, 0, "")}


def test_what_the_index_would_leave_out_is_not_sent(tmp_path: Path) -> None:
    docs = a_docs_site(tmp_path / "docs")
    write(docs, "guide.md", "# Guide\n\nText.\n")
    sent = {name.removeprefix("input/docs/") for name in members(docs) if "input/docs/" in name}
    assert "guide.md" in sent and ".gitignore" in sent
    for left_out in ("_static", "_build", "html/_sources", "node_modules", "site", "drafts"):
        assert not any(name == left_out or name.startswith(f"{left_out}/") for name in sent)
    assert "faq/old.tmp.md" not in sent and "faq/internal.md" not in sent
    assert not {"img/diagram.svg", "html/search/search_index.json", "html/sitemap.xml"} & sent


def test_the_manifest_survives_the_trip_through_image_labels(tmp_path: Path) -> None:
    """Every manifest field, lists of slices included, comes back from the labels as it was."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nInstall it with pip.\n")
    with VectorStore(tmp_path / "x.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, docs, metadata={"version": "2.0"})
        report = store.report()
    labels = manifest_labels(report, "python:3.12-slim")
    assert manifest_from_labels(labels) == Manifest.model_validate(report.manifest)
    assert manifest_from_labels(labels).slices[0].metadata == {"version": "2.0"}


def test_the_model_arguments_come_after_the_package_install() -> None:
    """Build arguments declared before a RUN are part of its cache key: declared after the
    install, they let images of another model (or model folder) reuse the installed toolkit."""
    for name in ("Dockerfile.builder", "Dockerfile.runtime"):
        lines = (REPOSITORY / name).read_text().splitlines()
        install = next(i for i, line in enumerate(lines) if "install-toolkit.sh /src" in line)
        for argument in ("ARG BACKEND=", "ARG MODEL_DIR="):
            declared = [i for i, line in enumerate(lines) if line.startswith(argument)]
            assert declared and min(declared) > install, f"{name}: {argument} before the install"
