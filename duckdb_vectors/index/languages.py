"""Which Snowball language each chunk's words are read in: its library's own (a bundle entry's
``language``), else the index's (``manifest.language``).

A chunk is indexed under its words' forms in its library's language. A query word is looked up
under its forms in every language of the libraries a search covers (``ParsedQuery.terms``): scoped
to a German library, its German forms; across an English and a German library, both. With one
language (every index without libraries of their own language) that is the index's one form of
each word, as before. Postings are keyed by term alone, so a German and an English form that are
the same string share their postings, as any two words with one form do.

The SDK (``search``), the ``search_text`` macro (``plain_sql``) and the writers (``chunk_table``)
all take the languages from here; a chunk's library is ``slices.library_sql``'s (in SQL) or
``slices.library_of``'s (in Python).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from .db import string_literal
from .slices import library_of
from .terms import DEFAULT_LANGUAGE


@dataclass(frozen=True)
class Languages:
    """The index's language and the libraries that have another one.

    Attributes:
        default: the language of every chunk whose library has none of its own (the index's).
        libraries: ``(library, language)`` of each library whose language is not ``default``,
            sorted; a library as ``slices.library_sql`` names it (``ray@2.9``).
    """

    default: str = DEFAULT_LANGUAGE
    libraries: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, default: str, own: Iterable[tuple[str, str | None]]) -> Languages:
        """The languages of an index of ``default`` whose libraries have the ``own`` languages
        (``(library, language)``, None: the index's)."""
        differing = {
            (library, language) for library, language in own if language not in (None, default)
        }
        return cls(default, tuple(sorted(differing)))

    @property
    def several(self) -> bool:
        """Whether some library's words are read in another language than the index's."""
        return bool(self.libraries)

    @cached_property
    def all(self) -> tuple[str, ...]:
        """Every language the index's chunks may be read in, sorted."""
        return tuple(sorted({self.default, *(language for _, language in self.libraries)}))

    def of_library(self, library: str) -> str:
        return dict(self.libraries).get(library, self.default)

    def of_libraries(self, libraries: Iterable[str]) -> list[str]:
        """The languages of ``libraries``, each once, sorted (the index's if there are none)."""
        own = dict(self.libraries)
        return sorted({own.get(library, self.default) for library in libraries}) or [self.default]

    def of_chunks(self, metadata: Sequence[str | None]) -> list[str]:
        """The language of each chunk, by its metadata (JSON text, as a write stores it)."""
        if not self.several:
            return [self.default] * len(metadata)
        return [
            self.of_library(library_of(json.loads(one))) if one else self.default
            for one in metadata
        ]

    def sql(self, library: str) -> str:
        """A SQL expression of the language of ``library`` (a SQL expression, e.g.
        ``slices.library_sql``'s)."""
        if not self.several:
            return string_literal(self.default)
        cases = " ".join(
            f"WHEN {string_literal(library)} THEN {string_literal(language)}"
            for library, language in self.libraries
        )
        return f"CASE {library} {cases} ELSE {string_literal(self.default)} END"
