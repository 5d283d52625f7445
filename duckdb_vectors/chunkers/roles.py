"""What a Sphinx role shows as text, one rule for reStructuredText (``:func:`~a.b.c```) and
MyST (``{func}`~a.b.c```): the explicit title of ``Title <target>``, the last part of
``~a.b.C``, ``PEP 8`` for a ``pep`` role, a ``doc`` path without its leading ``/``, nothing
for an icon; else the text itself."""

from __future__ import annotations

import regex

_TITLE_AND_TARGET = regex.compile(r"(.+?)\s*<([^<>]*)>", regex.DOTALL)
_NUMBERED = {"pep": "PEP", "rfc": "RFC"}
_ICONS = frozenset({"fa", "fas", "fab", "far", "octicon", "icon"})


def role_text(name: str, content: str) -> str:
    """The text a role named ``name`` (a domain prefix such as ``py:`` allowed) shows."""
    kind = name.lower().rsplit(":", 1)[-1]
    if kind in _ICONS or kind.startswith("material-"):
        return ""
    titled = _TITLE_AND_TARGET.fullmatch(content)
    if titled:
        return titled.group(1)
    text = content.lstrip("!")
    if text.startswith("~"):
        text = text[1:].rsplit(".", 1)[-1]
    if kind in _NUMBERED:
        return f"{_NUMBERED[kind]} {text.split('#', 1)[0]}"
    return text.lstrip("/") if kind == "doc" else text
