"""A bulk write numbers each chunk's words in C (``word_numbers``): the same tokens, in the
same order, as ``tokenize()``, which queries are split with, over every script."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


COMPILER = (sysconfig.get_config_var("CC") or "cc").split()[0]
PYTHON_HEADERS = Path(sysconfig.get_paths()["include"])
C_SOURCE = Path(__file__).parents[1] / "duckdb_vectors" / "index" / "_word_numbers.c"


def skip_without_a_compiler() -> None:
    if shutil.which(COMPILER) is None or not (PYTHON_HEADERS / "Python.h").is_file():
        pytest.skip(f"no C compiler ({COMPILER}) or no Python.h: words are numbered in Python")


def test_this_install_built_the_c_numbering() -> None:
    """Where a C compiler is at hand, `make install` builds it: a broken build would otherwise
    only show as slower writes."""
    skip_without_a_compiler()
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
# Texts and a token longer than the C's first buffers (1,024 bytes), so that they grow; and a
# text whose escaped form is exactly 1,024 characters, starting with a long escaped token (read
# back past the text's end, where the C keeps room: a buffer without it would overwrite the rest).
@example(chunks=[["caf\u00e9-\u03b1 v2.0 " * 700, "x" * 3000 + " \u03b1" * 1500]])
@example(chunks=[["\u00e9" * 100 + " " + "a" * 423]])
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


# Runs this file's tests of the C numbering on a build of it loaded in its place.
SANITIZED_RUN = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("duckdb_vectors.index._word_numbers", sys.argv[1])
sanitized = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sanitized)
sys.modules[spec.name] = sanitized
sys.path.insert(0, sys.argv[2])
import test_word_numbers as tests
assert tests.CompiledWordNumbers is sanitized.WordNumbers
tests.test_numbered_words_are_the_tokens_queries_are_split_into(numbering=sanitized.WordNumbers)
tests.test_a_word_has_one_number_across_texts_and_paths()
tests.test_the_c_numbering_says_what_it_takes()
"""


@pytest.mark.slow
def test_the_c_numbering_reads_and_writes_only_its_own_memory(tmp_path: Path) -> None:
    """The tests above, on a build with AddressSanitizer and UndefinedBehaviorSanitizer: a read
    past a token or a buffer, a use after free or an overflow stops the run, where the normal
    build could return wrong numbers or crash only now and then."""
    skip_without_a_compiler()
    runtimes = [
        subprocess.run(
            [COMPILER, f"-print-file-name={name}"], capture_output=True, text=True
        ).stdout.strip()
        for name in ("libasan.so", "libubsan.so")
    ]
    if not all(Path(runtime).is_absolute() for runtime in runtimes):
        pytest.skip(f"{COMPILER} has no sanitizer runtimes (libasan, libubsan)")
    built = tmp_path / f"_word_numbers{sysconfig.get_config_var('EXT_SUFFIX')}"
    flags = ["-shared", "-fPIC", "-g", "-O1", "-fno-omit-frame-pointer"]
    flags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    subprocess.run(
        [COMPILER, *flags, f"-I{PYTHON_HEADERS}", str(C_SOURCE), "-o", str(built)], check=True
    )
    environment = os.environ | {
        "LD_PRELOAD": ":".join(runtimes),
        "ASAN_OPTIONS": "detect_leaks=0",  # the interpreter's own allocations, not ours
        "PYTHONMALLOC": "malloc",  # small buffers too from malloc, which the sanitizer watches
    }
    run = subprocess.run(
        [sys.executable, "-c", SANITIZED_RUN, str(built), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:]
