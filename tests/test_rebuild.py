"""A served index is rebuilt beside itself: readers are never locked out, and a run stopped at
any moment (SIGINT, SIGTERM) leaves the index exactly as it was, and nothing half-made."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import DUCKDB_DOCS, SCRIPT, STATIC_MODEL

from duckdb_vectors import VectorStore

pytestmark = pytest.mark.slow

ENV = {"HF_HUB_OFFLINE": "1", "DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL), "PATH": "/usr/bin"}
QUERY = "aggregate functions"


def cli(*arguments: str) -> subprocess.CompletedProcess:
    assert SCRIPT is not None
    return subprocess.run(
        [SCRIPT, *arguments], env=ENV, capture_output=True, text=True, timeout=300
    )


def copy_docs(target: Path, folders: tuple[str, ...]) -> Path:
    for folder in folders:
        shutil.copytree(DUCKDB_DOCS / folder, target / folder)
    return target


def what_it_answers(db: Path) -> tuple[dict, list[str]]:
    """The index's manifest and the chunk ids of a search."""
    with VectorStore(db, model_path=STATIC_MODEL, read_only=True, memory_index=False) as store:
        assert store.manifest is not None
        hits = store.query(QUERY, top_k=5)
        return store.manifest.model_dump(mode="json"), [hit.chunk.chunk_id for hit in hits]


def rebuild(index: Path, tree: Path) -> subprocess.Popen:
    """Re-index ``index`` from ``tree`` in another language: every phase writes (re-tokenizing,
    chunking, embedding, pruning)."""
    assert SCRIPT is not None
    return subprocess.Popen(
        [SCRIPT, "index", str(tree), "--db", str(index), "--language", "german", "--no-progress"],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """An index of part of the DuckDB docs, a bigger tree to re-index it from, and how long
    that re-index takes when nothing stops it."""
    root = tmp_path_factory.mktemp("rebuild")
    small = copy_docs(root / "small", ("data",))
    big = copy_docs(root / "big", ("data", "sql", "guides"))
    index = root / "served.duckdb"
    built = cli("index", str(small), "--db", str(index), "--no-progress")
    assert built.returncode == 0, built.stderr
    whole = root / "whole.duckdb"
    shutil.copyfile(index, whole)
    started = time.monotonic()
    uninterrupted = rebuild(whole, big)
    _, stderr = uninterrupted.communicate(timeout=300)
    assert uninterrupted.returncode == 0, stderr
    return {"index": index, "big": big, "seconds": time.monotonic() - started}


# When the signal comes, as a share of an uninterrupted run (from its imports to its last
# write), and which: Ctrl-C, or a container being stopped.
MOMENTS = [
    (signal.SIGINT, 0.03),
    (signal.SIGTERM, 0.12),
    (signal.SIGINT, 0.25),
    (signal.SIGTERM, 0.4),
    (signal.SIGINT, 0.55),
    (signal.SIGTERM, 0.7),
    (signal.SIGINT, 0.85),
    (signal.SIGTERM, 0.95),
]


@pytest.mark.parametrize(("stop", "moment"), MOMENTS)
def test_a_run_stopped_at_any_moment_leaves_the_index_as_it_was(
    served: dict, tmp_path: Path, stop: signal.Signals, moment: float
) -> None:
    index = tmp_path / "docs.duckdb"
    shutil.copyfile(served["index"], index)
    before = what_it_answers(index)
    run = rebuild(index, served["big"])
    time.sleep(moment * served["seconds"])
    run.send_signal(stop)
    _, stderr = run.communicate(timeout=120)
    if run.returncode == 0:  # it finished first (the machine sped up): the index is the new one
        assert what_it_answers(index) != before
    elif run.returncode == -stop:  # before Python had even started the command: nothing ran
        assert what_it_answers(index) == before
    else:
        assert run.returncode == 128 + stop, stderr
        assert stderr.splitlines()[-1] == "Interrupted.", stderr
        assert what_it_answers(index) == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["docs.duckdb"]


def test_a_run_that_fails_leaves_the_index_and_nothing_else(
    served: dict[str, Path], tmp_path: Path
) -> None:
    index = tmp_path / "docs.duckdb"
    shutil.copyfile(served["index"], index)
    before = what_it_answers(index)
    failed = cli("index", str(served["big"]), "--db", str(index), "--backend", "hashing:64")
    assert failed.returncode == 1 and "built with" in failed.stderr, failed.stderr
    assert str(index) in failed.stderr and "staging" not in failed.stderr
    assert what_it_answers(index) == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["docs.duckdb"]
