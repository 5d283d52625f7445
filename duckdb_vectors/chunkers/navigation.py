"""Navigation sections: a heading over little but links (overview pages, tables of contents,
"Further reading" lists).

Alone, such a section is a small chunk of other pages' titles that outranks those pages on
their own topics. So the Markdown chunker leaves out a section of links within the same tree
(the pages it lists are indexed themselves) and folds a section of links elsewhere (papers,
downloads), which holds what the index has nowhere else, into the section before it.
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
