"""Template tags in Markdown text outside code (Jekyll's Liquid, Jinja, Hugo shortcodes),
reduced to what stays meaningful without the site generator.

A tag that names a page (Liquid ``{% link docs/x.md %}`` and ``{% post_url slug %}``, Hugo
``{{< ref "x.md" >}}``) becomes that name, so ``[text]({% link docs/x.md %})`` ends up as the
relative link ``[text](docs/x.md)``. Every other tag is dropped (its output is not in the
source), the text between paired tags stays, and a Liquid ``{% comment %}`` block goes whole.
"""

from __future__ import annotations

import re

_TAG = re.compile(
    r"""
    \{%-?\s*comment\s*-?%\}.*?\{%-?\s*endcomment\s*-?%\}
    | \{%-?\s*(?:link|post_url)\s+(?P<page>[^\s%]+)\s*-?%\}
    | \{\{[<%]\s*(?:rel)?ref\s+"?(?P<ref>[^"\s>%]+)"?\s*[>%]\}\}
    | \{%.{0,2000}?%\}
    | \{\{.{0,2000}?\}\}
    | \{\#.{0,2000}?\#\}
    """,
    re.DOTALL | re.VERBOSE,
)
_HINT = re.compile(r"\{[%{#]")


def strip_template_tags(text: str) -> str:
    """Text with template tags replaced by the page they name, or removed."""
    if not _HINT.search(text):
        return text
    return _TAG.sub(lambda match: match.group("page") or match.group("ref") or "", text)
