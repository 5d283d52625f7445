"""Chunks longer than the model embeds: counted in the index summary, stored whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ONNX_MODEL, STATIC_MODEL, run_cli

from duckdb_vectors import VectorStore, get_embedder

MINILM = "fastembed:sentence-transformers/all-MiniLM-L6-v2"
# Hex-like identifiers: WordPiece cuts each into several tokens, so the chunkers' 2,000
# characters need more than MiniLM's 512.
CODES = " ".join(f"x{i:06x}q" for i in range(200))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("backend", "model"),
    [(MINILM, ONNX_MODEL), ("fastembed:minishlab/potion-multilingual-128M", STATIC_MODEL)],
    ids=["transformer", "static"],
)
def test_a_model_says_how_many_of_its_windows_a_text_fills(backend: str, model: Path) -> None:
    embedder = get_embedder(backend, model)
    assert embedder.windows(["a short text", CODES * 4])[0] == 1
    assert embedder.windows([CODES * 4])[0] > 1


@pytest.mark.slow
@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_the_index_summary_counts_chunks_past_the_window_and_keeps_them_whole(
    tmp_path: Path, as_json: bool
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "codes.md").write_text(f"# Codes\n\n{CODES}\n\n## Short\n\nA short section.\n")
    db = tmp_path / "x.duckdb"
    arguments = ["index", str(docs), "--db", str(db), "--backend", MINILM]
    json_flag = ["--json"] if as_json else []
    env = {"DUCKDB_VECTORS_MODEL_PATH": str(ONNX_MODEL)}
    result = run_cli(*arguments, *json_flag, env=env)
    assert result.exit_code == 0, result.stderr
    if as_json:
        assert json.loads(result.stdout)["chunks_past_window"] == 1
    else:
        assert "window  1 chunks are longer than the model embeds" in result.stdout
    with VectorStore(db, read_only=True) as store:
        texts = [chunk.text for chunk in store.document("codes.md")]
    assert texts == [CODES, "A short section."]  # not cut: BM25 reads all of it
