"""Chunks sized to a transformer's window: a chunk longer than the model embeds is split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ONNX_MODEL, run_cli

from duckdb_vectors import get_embedder
from duckdb_vectors.chunkers import MarkdownChunker
from duckdb_vectors.chunkers.window import fit_to_window

MINILM = "fastembed:sentence-transformers/all-MiniLM-L6-v2"
LONG_SECTION = "\n\n".join(
    f"Paragraph {i} explains how retries back off exponentially between attempts." * 6
    for i in range(12)
)
PAGE = f"# Intro\n\nA short section.\n\n## Retries\n\n{LONG_SECTION}\n\n## End\n\nThe end.\n"


@pytest.fixture(scope="module")
def minilm():
    return get_embedder(MINILM, ONNX_MODEL)


def test_a_chunk_past_the_window_is_split_into_pieces_that_fit(minilm) -> None:
    chunks = MarkdownChunker(max_chars=20_000).chunk(PAGE, "guide.md")
    assert [c.title for c in chunks] == ["Intro", "Intro > Retries", "Intro > End"]
    assert minilm.windows([chunks[1].text])[0] > 1  # too long for 512 tokens
    fitted, split = fit_to_window(chunks, minilm.windows)
    assert split == 1 and len(fitted) > 3
    assert all(count == 1 for count in minilm.windows([c.text for c in fitted]))
    assert [c.position for c in fitted] == list(range(len(fitted)))
    assert [c.chunk_id for c in fitted] == [f"guide.md#{i}" for i in range(len(fitted))]
    middle = fitted[1:-1]
    assert {c.title for c in middle} == {"Intro > Retries"}
    assert "".join(c.text for c in middle).replace("\n", "") == LONG_SECTION.replace("\n", "")


def test_chunks_that_fit_are_left_as_they_are(minilm) -> None:
    chunks = MarkdownChunker().chunk("# A\n\nshort text\n", "a.md")
    assert fit_to_window(chunks, minilm.windows) == (chunks, 0)


# Hex-like identifiers: WordPiece cuts each into several tokens, so 2,000 characters (the
# chunkers' default) need more than 512.
DENSE_PAGE = "# Codes\n\n" + " ".join(f"x{i:06x}q" for i in range(600)) + "\n"


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_the_index_summary_says_how_many_chunks_were_split(tmp_path: Path, as_json: bool) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "codes.md").write_text(DENSE_PAGE)
    db = tmp_path / "x.duckdb"
    arguments = ["index", str(docs), "--db", str(db), "--backend", MINILM]
    result = run_cli(
        *arguments,
        *(["--json"] if as_json else []),
        env={"DUCKDB_VECTORS_MODEL_PATH": str(ONNX_MODEL)},
    )
    assert result.exit_code == 0, result.stderr
    if as_json:
        assert json.loads(result.stdout)["chunks_split_to_window"] >= 1
    else:
        assert "chunks longer than the model embeds were split to fit" in result.stdout
