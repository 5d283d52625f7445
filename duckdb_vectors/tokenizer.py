"""The exact-token tokenizer behind the lexical (BM25) signal.

Deliberately simple: no stemming, no stop words, so codes and identifiers (``S3``, ``E1234``,
``v2.0``, ``array_cosine_distance``) are matched as written.

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

``terms`` builds BM25's terms from these tokens; the manifest names that scheme.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from itertools import filterfalse, pairwise

import regex

_CJK = r"[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}]&&[\p{L}\p{M}]"
# By Unicode block, which the check below needs (a block range is cheap to search for).
_NO_SPACE_BLOCKS = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u19e0-\u19ff\ua9e0-\ua9ff\uaa60-\uaa7f"
_HANGUL_BLOCKS = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7ff\uffa0-\uffdc"
# Scripts whose runs of letters and marks are split by their SCRIPT_RUNS entry, not read as
# words: those written without spaces between words, and Hangul, whose words carry particles.
_SCRIPTS = {
    "cjk": _CJK,
    "no_space": rf"[{_NO_SPACE_BLOCKS}]&&[\p{{L}}\p{{M}}]",
    "hangul": rf"[{_HANGUL_BLOCKS}]&&[\p{{L}}\p{{M}}]",
}


def _token_pattern(scripts: list[str]) -> regex.Pattern[str]:
    """A run of one of ``scripts`` (group ``run``), or a word of any other letters (``word``)."""
    word = rf"[[\p{{L}}\p{{N}}\p{{M}}_]{''.join(f'--[{script}]' for script in scripts)}]+"
    runs = "|".join(f"[{script}]+" for script in scripts)
    return regex.compile(rf"(?P<run>{runs})|(?P<word>{word}(?:[.\-']{word})*)", regex.V1)


_TOKEN = _token_pattern(list(_SCRIPTS.values()))
# Excluding more scripts from words makes the word pattern 1.45x slower, so text without any
# of them (Latin, Cyrillic, Greek, Arabic, Indic, Chinese, Japanese...) uses this one. Which
# text needs _TOKEN is judged before NFKC, which turns enclosed Hangul (U+3200-327F) into Hangul.
_TOKEN_UNLESS_SCRIPT_RUNS = _token_pattern([_CJK])
_SCRIPT_RUN_BLOCK = re.compile(f"[{_NO_SPACE_BLOCKS}{_HANGUL_BLOCKS}\u3200-\u327f]")
_SCRIPT_CHARACTER = {name: regex.compile(f"[{s}]", regex.V1) for name, s in _SCRIPTS.items()}
_GRAPHEME = regex.compile(r"\X")
_WORD_CHARACTER = regex.compile(r"[\p{L}\p{N}\p{M}_]")
_JOINERS = re.compile(r"[.\-']")
# Found by the regex engine, not taken from set(text): 3x faster on SciFact's non-ASCII chunks
# (text of other scripts is mostly non-ASCII: the first such character decides most of it).
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
# In ASCII text, where NFKC changes nothing and casefold is lower(), a word is a run of these,
# single joiners between them joining it into a compound: [a-z0-9_]+(?:[.\-'][a-z0-9_]+)*.
_ASCII_WORD_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
# Every other ASCII character but the joiners, whitespace too, to a space.
_ASCII_SEPARATORS = str.maketrans(
    {c: " " for c in map(chr, range(128)) if c not in _ASCII_WORD_CHARACTERS and c not in ".-'"}
)
# Korean particles and the commonest endings after a noun (하다, 되다, the copula). One is
# stripped, the longest that leaves a stem. Measured on Korean Debian package descriptions
# (bench/tokenizer_scripts.py): MRR@10 0.55 as whole words, 0.69 with stems; Hangul bigrams
# reached 0.67 with three times the tokens.
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
    question readable; a Russian question naming a Latin title ("Кто написал Liber
    servitoris?", 15 Latin letters of 25) is not."""
    if text.isascii():
        return True
    letters = len(_LETTER.findall(text))
    return 5 * len(_LATIN_LETTER.findall(text)) >= 4 * letters


def tokenize(text: str) -> list[str]:
    """Split ``text`` into the case-folded tokens that BM25 indexes and queries with.

    ``general_tokens`` says what they are; two faster paths give the same tokens for most
    text (tests/test_properties.py holds them equal over every script).
    """
    form = ascii_form(text)
    return ascii_tokens(*form) if form is not None else general_tokens(text)


def ascii_form(text: str) -> tuple[str, bool] | None:
    """``text`` as the ASCII path splits it (``ascii_tokens``), and whether it is escaped;
    None if it needs the general path."""
    if text.isascii():
        return text, False
    escaped = _ascii_escaped(text)
    return (escaped, True) if escaped is not None else None


def _ascii_escaped(text: str) -> str | None:
    """Non-ASCII ``text`` case-folded, with each non-ASCII word character written as an
    escape of ASCII word characters and every other non-ASCII character as a space, if its
    tokens can be read from that; else None.

    English text with a few Greek letters or accents is the commonest non-ASCII text (a fifth
    of SciFact's chunks): this splits it 1.8x faster than the general path (NFKC, case folding,
    and the regex module's set-operation classes).
    """
    first = _NON_ASCII.search(text)
    if first is not None and not _plain(first.group()):  # Chinese text, say: no list made
        return None
    if not (
        all(map(_plain, set(_NON_ASCII.findall(text)))) and unicodedata.is_normalized("NFKC", text)
    ):
        return None
    folded = text.casefold()
    if _ESCAPE in folded:
        return None
    return folded.encode("ascii", _ESCAPING).decode("ascii")


def general_tokens(text: str) -> list[str]:
    """The tokens of ``text`` by the rules the module describes, for any text."""
    if _SCRIPT_RUN_BLOCK.search("".join(set(text))):
        pattern, run_tokens = _TOKEN, _script_run_tokens
    else:  # runs can only be Chinese or Japanese
        pattern, run_tokens = _TOKEN_UNLESS_SCRIPT_RUNS, SCRIPT_RUNS["cjk"]
    words = []
    for run, word in pattern.findall(unicodedata.normalize("NFKC", text).casefold()):
        if word:
            words.append(word)
        else:
            words.extend(run_tokens(run))
    return _with_compound_parts(words)


def ascii_tokens(text: str, escaped: bool = False) -> list[str]:
    """The tokens of ASCII ``text``, or of text ``ascii_form`` escaped (``escaped``)."""
    tokens = _ascii_tokens(text)
    if not escaped or _ESCAPE not in text:  # non-ASCII characters that only separated words
        return tokens
    return [_ESCAPED.sub(_unescaped, token) if _ESCAPE in token else token for token in tokens]


def _ascii_tokens(text: str) -> list[str]:
    """The words of ASCII ``text`` (see ``_ASCII_WORD_CHARACTERS``), then the parts of its
    compounds, found by string methods in C, with Python work per joiner rather than per word:
    on SciFact's ASCII abstracts 1.3x faster than checking each word for a joiner (nearly every
    chunk has one, a full stop), and as fast on the DuckDB docs (bench/tokenize_speed.py)."""
    # A full stop before a space joins nothing: most go here, in C, before the loop below.
    separated = text.lower().translate(_ASCII_SEPARATORS).replace(". ", "  ")
    for joiner in ".-'":
        if joiner in separated:
            separated = _joining_only(separated, joiner)
    words = separated.split()
    if "." not in separated and "-" not in separated and "'" not in separated:
        return words
    # Every joiner left is in a compound; words of letters and digits only are not.
    compounds = [word for word in filterfalse(str.isalnum, words) if _JOINERS.search(word)]
    return words + " ".join(compounds).translate(_JOINERS_TO_SPACES).split()


_JOINERS_TO_SPACES = str.maketrans(".-'", "   ")


def _joining_only(text: str, joiner: str) -> str:
    """``text`` with each ``joiner`` that is not between two word characters (a full stop,
    a dash between spaces, two in a row) made a space.

    Deciding for each joiner by its neighbours holds whichever joiner is handled first: one
    next to another joiner, or to the space it became, has a non-word neighbour either way.
    """
    pieces = text.split(joiner)
    parts = [pieces[0]]
    for before, after in pairwise(pieces):
        joins = before[-1:] in _ASCII_WORD_CHARACTERS and after[:1] in _ASCII_WORD_CHARACTERS
        parts.append(joiner if joins else " ")
        parts.append(after)
    return "".join(parts)


def _with_compound_parts(words: list[str]) -> list[str]:
    """``words``, then the parts of those that are compounds (``v2.0``: ``v2``, ``0``)."""
    parts = [
        part
        for word in words
        if "." in word or "-" in word or "'" in word
        for part in _JOINERS.split(word)  # never empty: joiners sit between characters
    ]
    return words + parts


@lru_cache(maxsize=4096)
def _plain(character: str) -> bool:
    """Whether text holding ``character`` can take the escaped path (see ``_ascii_escaped``).

    An ASCII character can. A letter, digit or mark can if it is not in a script split into
    runs and folds to one such character; any other character if it is no word character,
    stays so folded, and NFKC leaves it as it is (NFKC maps ① to 1 and ﬁ to fi). The text as a
    whole must be NFKC-normalized too (a letter and a combining mark may compose). Asked of
    the regex module, as the general path asks: its Unicode version can differ from
    unicodedata's.
    """
    if character.isascii():
        return True
    folded = character.casefold()
    if _WORD_CHARACTER.fullmatch(character):
        return len(folded) == 1 and _word_outside_runs(character) and _word_outside_runs(folded)
    return (
        _WORD_CHARACTER.search(folded) is None
        and unicodedata.normalize("NFKC", character) == character
    )


def _word_outside_runs(character: str) -> bool:
    return _WORD_CHARACTER.fullmatch(character) is not None and not any(
        pattern.fullmatch(character) for pattern in _SCRIPT_CHARACTER.values()
    )


# Marks an escaped character: "zq", its code point in hex, "zq". Text holding "zq" itself
# takes the general path, so an escape is never read into text that had none.
_ESCAPE = "zq"
_ESCAPED = re.compile(f"{_ESCAPE}([0-9a-f]+){_ESCAPE}")


def _escape(error: UnicodeError) -> tuple[str, int]:
    """The codec error handler that writes ``_ascii_escaped``'s escapes."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return "".join(map(_escaped, error.object[error.start : error.end])), error.end


_ESCAPING = "duckdb_vectors.tokenizer.escape"
codecs.register_error(_ESCAPING, _escape)


@lru_cache(maxsize=4096)
def _escaped(character: str) -> str:
    if _WORD_CHARACTER.fullmatch(character):
        return f"{_ESCAPE}{ord(character):x}{_ESCAPE}"
    return " "


def _unescaped(escape: re.Match[str]) -> str:
    return chr(int(escape.group(1), 16))


def _script_run_tokens(run: str) -> list[str]:
    return SCRIPT_RUNS[_script(run[0])](run)


@lru_cache(maxsize=4096)
def _script(character: str) -> str:
    return next(name for name, pattern in _SCRIPT_CHARACTER.items() if pattern.fullmatch(character))


def _characters_and_bigrams(run: str) -> list[str]:
    return list(run) + [run[i : i + 2] for i in range(len(run) - 1)]


def _grapheme_bigrams(run: str) -> list[str]:
    """Thai and its neighbours spell a syllable with several code points (a vowel may even
    come before its consonant), so n-grams are taken over grapheme clusters. Measured with
    bench/tokenizer_scripts.py, these bigrams found words as well as ICU's dictionary
    segmentation did in Thai and Khmer and better in Burmese, with 60% of the tokens of
    code-point bigrams and without ICU's 44 MB of native libraries."""
    clusters = _GRAPHEME.findall(run)
    return [first + second for first, second in pairwise(clusters)] or [run]


def _word_and_stem(run: str) -> list[str]:
    for length in _KOREAN_ENDING_LENGTHS:
        if len(run) > length and run[-length:] in _KOREAN_ENDINGS:
            return [run, run[:-length]]
    return [run]


# How a run of each script in ``_SCRIPTS`` becomes tokens. Changing one changes the tokens of
# every index: it needs a new ``terms.TOKENIZER_NAME``. (bench/tokenizer_scripts.py swaps entries to
# compare alternatives.)
SCRIPT_RUNS: dict[str, Callable[[str], list[str]]] = {
    "cjk": _characters_and_bigrams,
    "no_space": _grapheme_bigrams,
    "hangul": _word_and_stem,
}
