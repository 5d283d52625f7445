"""A bulk write numbers each chunk's words in C (``word_numbers``): the same tokens, in the
same order, as ``tokenize()``, which queries are split with, over every script."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import example, given, settings
from test_properties import ESCAPE_EXAMPLES, EVERY_SCRIPT

from duckdb_vectors.index.word_numbers import CompiledWordNumbers, PythonWordNumbers, numbered
from duckdb_vectors.tokenizer import tokenize

NUMBERINGS = [PythonWordNumbers, CompiledWordNumbers]
# Letters whose UTF-8 is 2, 3 and 4 bytes long, at the lengths' edges: C writes it.
UTF8_EDGES = "\u00ff\u07ca\u0800\u1ea1\U00010000\U00010400"
TEXTS = st.lists(
    st.sampled_from(EVERY_SCRIPT + UTF8_EDGES)
    | st.sampled_from([*ESCAPE_EXAMPLES, "a.b", "x-y'z", ". ", "--"])
    | st.characters(max_codepoint=127)
    | st.characters(),
    max_size=40,
).map("".join)


def test_this_install_built_the_c_numbering() -> None:
    """Where a C compiler is at hand, `make install` builds it: a broken build would otherwise
    only show as slower writes."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    if shutil.which(compiler) is None or not headers.is_file():
        pytest.skip(f"no C compiler ({compiler}) or no {headers}: words are numbered in Python")
    assert CompiledWordNumbers is not None, "duckdb_vectors.index._word_numbers was not built"


def tokens_of(chunks: list[list[str]], numbering: type) -> list[list[str]]:
    """Each chunk's tokens, read back from what ``numbered`` made of them with ``numbering``."""
    counts, numbers, words = numbered(chunks, len(chunks), numbering)
    assert len(set(words)) == len(words)
    tokens = [words[number] for number in numbers.tolist()]
    ends = np.cumsum(counts).tolist()
    return [tokens[start:end] for start, end in zip([0, *ends], ends, strict=False)]


@pytest.mark.parametrize("numbering", NUMBERINGS, ids=["python", "c"])
@settings(max_examples=300, deadline=None)
@given(chunks=st.lists(st.lists(TEXTS, max_size=3), max_size=4))
@example(chunks=[["v2.0 covid-19 O'Neil a..b -x- _id_ ABC", "End. 'quoted' --flag a.-b v2.0."]])
@example(chunks=[["TNF-\u03b1 and IL-1\u03b2, \u03bcM caf\u00e9's", "\u03b1zq"]])
@example(chunks=[[f"x{c} {c}-{c}" for c in UTF8_EDGES]])
@example(chunks=[["Stra\u00dfe \u4e2d\u6587 \ud55c\uad6d\uc5b4\ub97c \u0e01\u0e32\u0e23"], []])
def test_numbered_words_are_the_tokens_queries_are_split_into(numbering, chunks) -> None:
    assert tokens_of(chunks, numbering) == [
        [token for text in texts for token in tokenize(text)] for texts in chunks
    ]


def test_a_word_has_one_number_across_texts_and_paths() -> None:
    """ASCII text, escaped text (é) and text of the general path (Chinese) share the numbers."""
    counts, numbers, words = numbered([["Café v2.0"], ["café v2"], ["v2 中 café"]], 3)
    assert counts.tolist() == [4, 2, 3]
    tokens = [words[number] for number in numbers.tolist()]
    assert tokens == ["café", "v2.0", "v2", "0", "café", "v2", "v2", "中", "café"]
    assert len(words) == len(set(words)) == 5


def test_the_c_numbering_says_what_it_takes() -> None:
    with pytest.raises(TypeError, match="no arguments"):
        CompiledWordNumbers(["a"])
    numbers = CompiledWordNumbers()
    with pytest.raises(ValueError, match="ASCII"):
        numbers.add_ascii("café")
    with pytest.raises(TypeError, match="strings"):
        numbers.add_words(["a", 1])
    for broken in ("zq3b1", "zqzq", "zq41zq", "zq110000zq", "zqgzq"):  # not ascii_form's escapes
        with pytest.raises(ValueError, match="not escaped text"):
            numbers.add_ascii(f"a {broken} b", True)
