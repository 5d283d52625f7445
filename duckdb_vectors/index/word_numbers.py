"""A batch's words as numbers: each distinct word once, and every word as its place among them.

A bulk write numbers every word of every chunk (about 220 a SciFact abstract). Text that
``tokenizer`` splits on its ASCII path (ASCII text, and most other text once
``tokenizer.ascii_form`` has written it in ASCII) is split and numbered in C by
``_word_numbers.c``, which makes a Python string only for each distinct word: 2.9x faster than
``tokenize()`` and a dict lookup per word (bench/word_numbering.py, bench/RESULTS.md). Where that
extension could not be built (no C compiler at install), ``PythonWordNumbers`` numbers the same
words.
tests/test_word_numbers.py holds both equal to ``tokenize()``.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from typing import Protocol

import numpy as np

from ..tokenizer import ascii_form, ascii_tokens, general_tokens

try:
    from ._word_numbers import WordNumbers as CompiledWordNumbers
except ImportError:  # built without a C compiler: PythonWordNumbers numbers the same words
    CompiledWordNumbers = None


class WordNumbers(Protocol):
    @property
    def words(self) -> list[str]: ...

    def add_ascii(self, text: str, escaped: bool = False) -> int: ...

    def add_words(self, words: list[str]) -> int: ...

    def numbers(self) -> bytes | array: ...


class PythonWordNumbers(dict[str, int]):
    """``WordNumbers`` in Python: each word's number is the count of distinct words before it."""

    def __init__(self) -> None:
        super().__init__()
        self._numbers = array("i")

    def __missing__(self, word: str) -> int:
        self[word] = number = len(self)
        return number

    @property
    def words(self) -> list[str]:
        return list(self)

    def add_ascii(self, text: str, escaped: bool = False) -> int:
        return self.add_words(ascii_tokens(text, escaped))

    def add_words(self, words: list[str]) -> int:
        self._numbers.extend(map(self.__getitem__, words))
        return len(words)

    def numbers(self) -> array:
        return self._numbers


def new() -> WordNumbers:
    return CompiledWordNumbers() if CompiledWordNumbers is not None else PythonWordNumbers()


def numbered(
    chunks: Iterable[list[str]], count: int, numbering: Callable[[], WordNumbers] = new
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The words of ``count`` chunks, each given as its texts (``terms.index_texts``): each
    chunk's word count, every word as its number (chunk after chunk), and the distinct words."""
    numbers = numbering()
    counts = np.empty(count, dtype=np.int32)
    for row, texts in enumerate(chunks):
        counts[row] = sum(_add(numbers, text) for text in texts)
    return counts, np.frombuffer(numbers.numbers(), dtype=np.int32), numbers.words


def _add(numbers: WordNumbers, text: str) -> int:
    """Number ``text``'s tokens (``tokenizer.tokenize``'s, in its order)."""
    form = ascii_form(text)
    return numbers.add_ascii(*form) if form is not None else numbers.add_words(general_tokens(text))
