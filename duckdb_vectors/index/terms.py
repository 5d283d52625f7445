"""The BM25 terms of a chunk and of a query (for users: docs/search.md).

- **Codes and identifiers** (a token with a digit, an underscore or a joiner: ``S3``, ``v2.0``,
  ``read_csv_auto``) are terms as written (``tokenizer.tokenize``'s tokens).
- **Words** (alphabetic tokens) are their Snowball stem: Latin letters in the chunk's language
  (its library's, else the index's: ``languages``), Cyrillic, Greek, Arabic and Armenian by
  their script's stemmer; other scripts as written. A query word is each of its forms in the
  languages of the libraries searched.
  Stems replace the words rather than sit beside them, which ranked lower (docs/relevance.md).
- **Headings as a field**: the title breadcrumb's terms count ``TITLE_WEIGHT`` times.
- **Question words**: a query's conversational words are left out when content words remain.

The scheme's name (``TOKENIZER_NAME``) and the index's language are in its manifest; an index
is only searched with the terms that built it (see ``retokenize``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import regex
import Stemmer

from ..errors import InvalidSettingError
from ..tokenizer import mostly_latin, tokenize

TOKENIZER_NAME = "words-v3"
DEFAULT_LANGUAGE = "english"
TITLE_WEIGHT = 2

# Scripts with a Snowball stemmer of their own: their words are stemmed whatever the index's
# language (which chooses the stemmer of Latin-script words).
_SCRIPT_STEMMERS = {"Cyrillic": "russian", "Greek": "greek", "Arabic": "arabic"}
_SCRIPT_STEMMERS["Armenian"] = "armenian"
_SCRIPT_OF = {name: regex.compile(rf"\p{{sc={name}}}") for name in [*_SCRIPT_STEMMERS, "Latin"]}

# fmt: off
QUESTION_WORDS = frozenset((
    "how", "what", "which", "why", "when", "where", "who", "whom", "whose",
    "do", "does", "did", "doing", "done", "can", "could", "should", "would", "will", "shall",
    "may", "might", "must", "is", "are", "was", "were", "be", "been", "being", "am",
    "i", "me", "my", "we", "our", "us", "you", "your", "it", "its", "there", "here",
    "a", "an", "the", "this", "that", "these", "those", "to", "of", "in", "on", "at", "for",
    "with", "from", "by", "about", "into", "and", "or", "but", "if", "so", "ok", "okay", "hi",
    "hello", "please", "thanks", "just", "also", "some", "any", "get", "got", "want", "need",
    "know", "tell", "way", "possible", "there's", "what's", "how's", "i'm", "it's", "don't",
    "doesn't", "isn't", "can't", "i've", "i'd", "let", "like", "yes", "no", "not",
))
# fmt: on


def index_terms(title: str | None, text: str, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """The terms a chunk is indexed under: its title's ``TITLE_WEIGHT`` times, then its
    text's."""
    return word_forms(index_words(title, text), language)


def index_words(title: str | None, text: str) -> list[str]:
    """The words (tokens) behind ``index_terms``, in the same order."""
    return (tokenize(title) * TITLE_WEIGHT if title else []) + tokenize(text)


@dataclass(frozen=True)
class ParsedQuery:
    """A query's text and what the search reads of it, made once where the text enters
    (``parse_query``). Its terms depend on the languages of the libraries searched
    (``index.languages``): each word's form in each of them.

    Attributes:
        text: the text, as given (what the model embeds).
        words: the words BM25 looks up, each once: its content words (all its words if it has
            no other; see ``QUESTION_WORDS``).
        all_words: every word, conversational ones too, each once: what a chunk must hold for
            ``match="all"``.
        mostly_latin: whether its letters are mostly Latin (``tokenizer.mostly_latin``).
    """

    text: str
    words: list[str]
    all_words: list[str]
    mostly_latin: bool

    def terms(self, languages: Sequence[str]) -> list[str]:
        """The terms BM25 looks up in ``languages``: each word's form in each, each once."""
        return _distinct_forms(self.words, languages)

    def all_terms(self, languages: Sequence[str]) -> list[str]:
        """The terms of every word in ``languages``, each once."""
        return _distinct_forms(self.all_words, languages)

    def required(self, languages: Sequence[str]) -> list[list[str]]:
        """For ``match="all"``: each word as its forms in ``languages``, any of which a chunk
        must hold (each list once)."""
        groups = (tuple(_distinct_forms([word], languages)) for word in self.all_words)
        return [list(group) for group in dict.fromkeys(groups)]


def parse_query(text: str) -> ParsedQuery:
    """``text`` as a query: tokenized once."""
    words = tokenize(text)
    content = [word for word in words if word not in QUESTION_WORDS]
    return ParsedQuery(
        text, list(dict.fromkeys(content or words)), list(dict.fromkeys(words)), mostly_latin(text)
    )


def _distinct_forms(words: list[str], languages: Sequence[str]) -> list[str]:
    """Each word's forms in ``languages``, word after word, each form once."""
    if len(languages) == 1:  # every index of one language: on each query's path
        return list(dict.fromkeys(map(_forms(languages[0]).__getitem__, words)))
    by_language = [word_forms(words, language) for language in languages]
    return list(dict.fromkeys(form for forms in zip(*by_language, strict=True) for form in forms))


def word_forms(words: list[str], language: str = DEFAULT_LANGUAGE) -> list[str]:
    """Each word as its term: its stem if it is alphabetic and has a stemmer, else itself."""
    return list(map(_forms(language).__getitem__, words))


class _WordForms(dict[str, str]):
    """Each word's term, worked out once per word."""

    def __init__(self, language: str) -> None:
        super().__init__()
        self.language = language
        self.latin = _stemmer(language)

    def __missing__(self, word: str) -> str:
        form = word
        if word.isalpha():  # codes, numbers, identifiers, compounds: as written
            stemmer = self.latin if word.isascii() else _stemmer_for(word, self.language)
            if stemmer is not None:
                form = stemmer.stemWord(word)
        if len(self) < _FORMS_HELD:
            self[word] = form
        return form


# Words whose forms are held per language: a large docs vocabulary, about 60 MB at most.
_FORMS_HELD = 500_000


@lru_cache(maxsize=16)
def _forms(language: str) -> _WordForms:
    return _WordForms(language)


@lru_cache(maxsize=16)
def _stemmer(language: str) -> Stemmer.Stemmer:
    return Stemmer.Stemmer(language)


def _stemmer_for(word: str, language: str) -> Stemmer.Stemmer | None:
    """The stemmer of ``word``'s script (by its first letter), or None."""
    for script, pattern in _SCRIPT_OF.items():
        if pattern.match(word):
            return _stemmer(_SCRIPT_STEMMERS.get(script, language))
    return None


LANGUAGES = tuple(Stemmer.algorithms())


def own_language(language: str | None) -> str | None:
    """A library's own language: none (the index's), or one Snowball has a stemmer for."""
    return language if language is None else checked_language(language)


def checked_language(language: str) -> str:
    """``language`` if Snowball has a stemmer for it; else one line saying which it has."""
    if language not in LANGUAGES:
        raise InvalidSettingError(
            f"language {language!r} has no stemmer; use one of: {', '.join(LANGUAGES)}"
        )
    return language
