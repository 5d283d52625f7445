"""Navigation sections: a heading over little but links, as a docs site's overview pages,
tables of contents and "Further reading" lists have them.

Alone, such a section becomes a small chunk whose words are the titles of other pages, and it
outranks those pages on their own topics: on the DuckDB docs, "how do I read a parquet file"
found the guides index's "Parquet Files" list of three links above the Parquet page itself.
So the Markdown chunker leaves out a section of links within the same tree (relative paths,
``#anchors``): the pages it lists are indexed themselves. A section of links elsewhere (a
list of papers, downloads, other projects) holds what the index has nowhere else: it is
folded into the section before it, where it no longer makes a chunk that is all titles.
"""

from __future__ import annotations

import re

# [text](target) and ![alt](target): a target may hold one level of parentheses and a title.
_LINK = re.compile(
    r"!?\[(?P<text>(?:[^\[\]]|\[[^\]]*\])*)\]"
    r"\(\s*(?P<target>[^()\s]*(?:\([^()]*\)[^()\s]*)?)(?:\s+\"[^\"]*\")?\s*\)"
)
_WORD = re.compile(r"\w+")
_SCHEME = re.compile(r"[A-Za-z][\w+.-]*:")  # https:, mailto:... (a relative path has none)
NAVIGATION_SHARE = 0.7  # of a section's words inside link texts


def link_share(text: str) -> float:
    """The share of the words of Markdown text that are link texts (link targets are not
    counted as words)."""
    links = _LINK.findall(text)  # (text, target) pairs; no Python call per link
    linked = len(_WORD.findall(" ".join(link_text for link_text, _ in links)))
    total = len(_WORD.findall(text)) - len(_WORD.findall(" ".join(t for _, t in links)))
    return linked / total if total > 0 else 0.0


def is_navigation(text: str) -> bool:
    """Whether a section's text is mostly links."""
    return "](" in text and link_share(text) > NAVIGATION_SHARE


def links_within(text: str) -> bool:
    """Whether every link of the text points into the same tree (no URL scheme)."""
    return not any(_SCHEME.match(link.group("target")) for link in _LINK.finditer(text))
