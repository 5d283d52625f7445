"""The tokenizer behind the lexical (BM25) signal: text to the tokens ``terms`` makes terms of.

- Text is NFKC-normalised and case-folded.
- A word is a run of letters, digits, combining marks and underscores; single ``.``, ``-`` or
  ``'`` between word characters join it into one compound token (``v2.0``, ``covid-19``).
  A compound token's parts are tokens too, so ``duckdb-vectors`` is found by ``vectors``; they
  come after all the words (BM25 counts tokens, in any order).
- Scripts written without spaces between words give n-grams, so any query word found inside a
  chunk matches it: a run of Chinese or Japanese (Han, kana) becomes its single characters plus
  its character bigrams; a run of Thai, Lao, Khmer or Burmese becomes the bigrams of its
  grapheme clusters (a consonant with its vowel signs and tone marks).
- A run of Hangul is a word of its own (``DuckDB를`` gives ``duckdb`` and ``를``), emitted
  also without a common trailing particle or ending (``데이터베이스를``: ``데이터베이스``).

This is the rule's one Python implementation; the other is the ``search_text`` SQL macro
(``index/plain_sql.py``), held equal to it by tests/test_properties.py. ``terms`` builds BM25's
terms from these tokens; the manifest names that scheme.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from itertools import filterfalse, pairwise

import regex

_CJK = r"[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}]&&[\p{L}\p{M}]"
_NO_SPACE_BLOCKS = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u19e0-\u19ff\ua9e0-\ua9ff\uaa60-\uaa7f"
_HANGUL_BLOCKS = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7ff\uffa0-\uffdc"
# Scripts whose runs of letters and marks are split by their SCRIPT_RUNS entry, not read as
# words: those written without spaces between words, and Hangul, whose words carry particles.
_SCRIPTS = {
    "cjk": _CJK,
    "no_space": rf"[{_NO_SPACE_BLOCKS}]&&[\p{{L}}\p{{M}}]",
    "hangul": rf"[{_HANGUL_BLOCKS}]&&[\p{{L}}\p{{M}}]",
}
# A word: letters, digits, marks and underscores outside those scripts, single joiners between
# them; or a run of one of the scripts (told apart by its first character). The classes name
# ASCII first (in words) or exclude it first (in runs), so most characters are decided without
# testing the scripts.
_OUTSIDE_SCRIPTS = "".join(f"--[{script}]" for script in _SCRIPTS.values())
_WORD = rf"[[A-Za-z0-9_][[\p{{L}}\p{{N}}\p{{M}}_]{_OUTSIDE_SCRIPTS}]]+"
_RUNS = "|".join(rf"[[^\x00-\x7f]&&[{script}]]+" for script in _SCRIPTS.values())
_TOKEN = regex.compile(rf"{_WORD}(?:[.\-']{_WORD})*|{_RUNS}", regex.V1)
_SCRIPT_CHARACTER = {name: regex.compile(f"[{s}]", regex.V1) for name, s in _SCRIPTS.items()}
_GRAPHEME = regex.compile(r"\X")
_JOINERS = re.compile(r"[.\-']")

# Korean particles and the commonest endings after a noun (하다, 되다, the copula). One is
# stripped, the longest that leaves a stem: stems rank better than whole words, and as well as
# Hangul bigrams with a third of the tokens.
# fmt: off
_KOREAN_ENDINGS = frozenset((
    "이", "가", "을", "를", "은", "는", "의", "에", "에서", "에게", "께", "한테", "와", "과",
    "로", "으로", "도", "만", "까지", "부터", "보다", "처럼", "이나", "나",  # particles
    "에는", "에서는", "으로는", "로는", "과의", "와의",  # particles combined
    "이다", "입니다", "이며", "이고",  # the copula
    "하다", "합니다", "하는", "하여", "해서", "했다", "한다", "할", "한", "하고", "하며", "하면",
    "하기", "하지", "했습니다", "된", "되는", "됩니다", "되어", "되지",  # 하다 and 되다
))
# fmt: on
_KOREAN_ENDING_LENGTHS = sorted({len(ending) for ending in _KOREAN_ENDINGS}, reverse=True)

_LETTER = regex.compile(r"\p{L}")
_LATIN_LETTER = regex.compile(r"\p{sc=Latin}")


def mostly_latin(text: str) -> bool:
    """Whether at least four in five of ``text``'s letters are Latin (True if it has no
    letter): what a model trained on English can read. A Greek letter in a formula leaves a
    question readable; a Russian question naming a Latin title is not."""
    if text.isascii():
        return True
    letters = len(_LETTER.findall(text))
    return 5 * len(_LATIN_LETTER.findall(text)) >= 4 * letters


def tokenize(text: str) -> list[str]:
    """Split ``text`` into the case-folded tokens that BM25 indexes and queries with (see
    the module)."""
    words = []
    for token in _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold()):
        script = _script(token[0]) if token[0] > "\x7f" else None  # no script run is ASCII
        if script is None:
            words.append(token)
        else:
            words.extend(SCRIPT_RUNS[script](token))
    return _with_compound_parts(words)


def _with_compound_parts(words: list[str]) -> list[str]:
    """``words``, then the parts of those that are compounds (``v2.0``: ``v2``, ``0``)."""
    parts = [
        part
        for word in filterfalse(str.isalnum, words)  # a compound has a joiner: not alphanumeric
        if "." in word or "-" in word or "'" in word
        for part in _JOINERS.split(word)  # never empty: joiners sit between characters
    ]
    return words + parts


@lru_cache(maxsize=4096)
def _script(character: str) -> str | None:
    """The name of the script in ``_SCRIPTS`` whose runs hold ``character``, or None."""
    return next(
        (name for name, pattern in _SCRIPT_CHARACTER.items() if pattern.fullmatch(character)), None
    )


def _characters_and_bigrams(run: str) -> list[str]:
    return list(run) + [run[i : i + 2] for i in range(len(run) - 1)]


def _grapheme_bigrams(run: str) -> list[str]:
    """Thai and its neighbours spell a syllable with several code points (a vowel may even
    come before its consonant), so n-grams are taken over grapheme clusters: they find words
    as well as a dictionary segmenter does, without its native libraries."""
    clusters = _GRAPHEME.findall(run)
    return [first + second for first, second in pairwise(clusters)] or [run]


def _word_and_stem(run: str) -> list[str]:
    for length in _KOREAN_ENDING_LENGTHS:
        if len(run) > length and run[-length:] in _KOREAN_ENDINGS:
            return [run, run[:-length]]
    return [run]


# How a run of each script in ``_SCRIPTS`` becomes tokens. Changing one changes the tokens of
# every index: it needs a new ``terms.TOKENIZER_NAME``.
SCRIPT_RUNS: dict[str, Callable[[str], list[str]]] = {
    "cjk": _characters_and_bigrams,
    "no_space": _grapheme_bigrams,
    "hangul": _word_and_stem,
}
