"""The exact-v1 tokenizer as released (duckdb_vectors/tokenizer.py before exact-v2), frozen.

Tests build indexes the way exact-v1 did, and check that exact-v2 changed nothing outside Thai,
Lao, Khmer, Burmese and Korean. Do not edit: it is a record of what old indexes hold.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import regex

TOKENIZER_NAME = "exact-v1"

_CJK = r"[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}]&&[\p{L}\p{M}]"
_WORD = rf"[[\p{{L}}\p{{N}}\p{{M}}_]--[{_CJK}]]+"
_TOKEN = regex.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>{_WORD}(?:[.\-']{_WORD})*)", regex.V1)
_WORD_CHARACTER = regex.compile(r"[\p{L}\p{N}\p{M}_]")
_JOINERS = re.compile(r"[.\-']")
# The word pattern for ASCII text, where NFKC changes nothing and casefold is lower(): the
# stdlib engine runs it 2x faster, and most chunks of technical text are ASCII.
_ASCII_WORD = re.compile(r"[a-z0-9_]+(?:[.\-'][a-z0-9_]+)*")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into the case-folded tokens that BM25 indexes and queries with."""
    if text.isascii() or _ascii_words_only(text):
        words = _ASCII_WORD.findall(text.lower())
    else:
        words = []
        for cjk, word in _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold()):
            if word:
                words.append(word)
            else:
                words.extend(_cjk_grams(cjk))
    return _with_compound_parts(words)


def _with_compound_parts(words: list[str]) -> list[str]:
    """Each word, followed by its parts if it is a compound (``v2.0``: ``v2``, ``0``).

    This runs over every chunk, so it uses plain substring tests and no call per word: 1.4x
    faster than the same loop over (cjk, word) match pairs, and 2.6x faster than finditer.
    """
    tokens: list[str] = []
    for word in words:
        tokens.append(word)
        if "." in word or "-" in word or "'" in word:
            tokens.extend(_JOINERS.split(word))  # never empty: joiners sit between characters
    return tokens


def _ascii_words_only(text: str) -> bool:
    """Whether every non-ASCII character of ``text`` only separates words.

    Then the ASCII path gives the same tokens. Technical text often qualifies: the box-drawing
    characters of printed result tables, arrows, typographic quotes and dashes. (3x faster
    than the general path on such chunks of the DuckDB docs.)
    """
    return all(_separates(character) for character in set(text) if not character.isascii())


@lru_cache(maxsize=4096)
def _separates(character: str) -> bool:
    """Not part of any word, and unchanged by NFKC (which maps e.g. ① to 1 and ﬁ to fi).

    Asked of the regex module, not unicodedata: their Unicode versions can differ, and the
    general path is what the answer must agree with.
    """
    return (
        _WORD_CHARACTER.fullmatch(character) is None
        and unicodedata.normalize("NFKC", character) == character
    )


def _cjk_grams(run: str) -> list[str]:
    return list(run) + [run[i : i + 2] for i in range(len(run) - 1)]
