"""Template tags in Markdown sources (Jekyll's Liquid, Jinja, Hugo shortcodes), reduced to
what stays meaningful without the site generator that would have expanded them.

A tag that names a page (Liquid ``{% link docs/x.md %}`` and ``{% post_url slug %}``, Hugo
``{{< ref "x.md" >}}``) becomes that name, so ``[text]({% link docs/x.md %})`` ends up as the
ordinary relative link ``[text](docs/x.md)``: it still tells the reader where to go next, and
it is the path of the linked file in an index built from the site's root. Every other tag
(``{% include %}``, ``{% if %}``, ``{{ site.version }}``, ``{# comment #}``, ``{{% notice %}}``)
is dropped: its output is not in the source, and the text between paired tags stays. A
Liquid ``{% comment %}`` block goes whole.

Code is never passed here: a Jinja tutorial's code sample keeps its tags.
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
