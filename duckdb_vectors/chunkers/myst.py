"""MyST Markdown (Sphinx's Markdown): directives and roles reduced to the text they show.

Directives come as code fences (```` ```{note} ````) or colon fences (``:::{note}``, also
Docusaurus' ``:::tip[Title]`` and Pandoc's ``::: warning``); roles as ``{name}`` glued to a code
span. What a directive becomes depends on its name (``DIRECTIVES``); an unknown one keeps its
content as text, so it loses nothing.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from .base import fenced
from .roles import role_text


class Directive(Enum):
    """What a directive's content becomes in a chunk."""

    TEXT = "text"  # its argument (a title) and its content, as Markdown text
    CONTENT = "content"  # its content only: the argument is a path or layout
    CODE = "code"  # a code block in the language its argument names
    DROP = "drop"  # nothing
    RST = "rst"  # reStructuredText content, reduced to text


DIRECTIVES: dict[str, Directive] = {
    **dict.fromkeys(
        [
            *("code", "code-block", "code-cell", "sourcecode", "doctest", "testcode"),
            *("testoutput", "testsetup", "jupyter-execute", "ipython", "mermaid", "graphviz"),
        ],
        Directive.CODE,
    ),
    **dict.fromkeys(  # navigation, and directives whose content is not in the file
        [
            *("toctree", "tableofcontents", "contents", "include", "literalinclude", "image"),
            *("raw", "index", "highlight", "currentmodule", "module", "py:module"),
            *("py:currentmodule", "default-role", "role", "bibliography", "postlist", "glue"),
            "towncrier-draft-entries",
        ],
        Directive.DROP,
    ),
    **dict.fromkeys(
        ["figure", "button-link", "button-ref", "grid", "grid-item"], Directive.CONTENT
    ),
    "eval-rst": Directive.RST,
}
_GENERATED_PREFIX = "auto"  # autofunction, automodule, autosummary...: made from code at build


def directive_kind(name: str) -> Directive:
    """How the directive ``name`` is reduced (unknown ones keep their content as text)."""
    name = name.lower()
    if name.startswith(_GENERATED_PREFIX):
        return Directive.DROP
    return DIRECTIVES.get(name, Directive.TEXT)


_FENCE_INFO = re.compile(r"\{([\w:.+-]+)\}[ \t]*(.*)", re.DOTALL)
_OPTION = re.compile(r"[ \t]*:[\w.-]+:(?:[ \t].*)?")
_YAML_OPTIONS = re.compile(r"---[ \t]*\n.*?\n---[ \t]*(?:\n|$)", re.DOTALL)


def fence_directive(info: str) -> tuple[str, str] | None:
    """``(name, argument)`` when a code fence's info string is a MyST directive."""
    match = _FENCE_INFO.fullmatch(info.strip())
    return (match.group(1), match.group(2).strip()) if match else None


def render_directive(
    name: str, argument: str, body: str, render_markdown: Callable[[str], str]
) -> tuple[str, bool]:
    """A fenced directive as chunk text, and whether that text is a code block."""
    kind = directive_kind(name)
    content = _without_options(body)
    if kind is Directive.DROP:
        return "", False
    if kind is Directive.CODE:
        language = argument.split()[0] if argument else ""
        return fenced(content.strip("\n").rstrip(), language), True
    if kind is Directive.RST:
        return reduce_rst(content), False
    text = render_markdown(content)
    title = render_markdown(argument) if argument and kind is Directive.TEXT else ""
    return "\n\n".join(part for part in (title, text) if part), False


def _without_options(body: str) -> str:
    """A directive's content without its leading ``:option: value`` lines or YAML block."""
    yaml_block = _YAML_OPTIONS.match(body)
    if yaml_block:
        return body[yaml_block.end() :]
    lines = body.split("\n")
    skipped = 0
    while skipped < len(lines) and _OPTION.fullmatch(lines[skipped]):
        skipped += 1
    return "\n".join(lines[skipped:])


# Lines that only carry markup, and roles -----------------------------------------------------

ROLE_NAME = re.compile(r"\{([\w:.+-]+)\}\Z")  # at the end of the text before a code span
_TARGET_OR_BREAK = re.compile(r"^[ \t]*(?:\([^\s()]+\)=|\+\+\+.*)[ \t]*(?:\n|\Z)", re.MULTILINE)
_COMMENT_LINE = re.compile(r"%.*")


def strip_targets(text: str) -> str:
    """Text without MyST target lines ``(label)=`` and block breaks ``+++``."""
    if ")=" not in text and "+++" not in text:
        return text
    return _TARGET_OR_BREAK.sub("", text)


def is_comment(paragraph: str) -> bool:
    """Whether a paragraph is only MyST comment lines (``% ...``). A lone ``%`` line inside
    prose is left alone: in plain Markdown it can be a wrapped sentence."""
    return paragraph.startswith("%") and all(
        _COMMENT_LINE.fullmatch(line) for line in paragraph.strip().split("\n")
    )


# Colon fences ------------------------------------------------------------------------------

_COLON_FENCE = re.compile(
    r"[ \t]*(?P<colons>:{3,})[ \t]*"  # indented too: fences nest in list items
    r"(?:\{\.?(?P<braced>[\w:.+-]+)[^}]*\}|(?P<bare>[\w-]+))?"
    r"(?:\[(?P<bracketed>[^\]]*)\])?[ \t]*(?P<argument>.*?)[ \t]*"
)


@dataclass
class ColonFences:
    """Reads the colon-fence lines of one document, in order: an opening line becomes its
    title, its ``:option:`` lines and the closing line go, and the content of a dropped
    directive (``:::{toctree}``) goes with it."""

    _open: list[tuple[int, bool]] = field(default_factory=list)  # (colons, drops content)
    _in_options: bool = False
    dropping: bool = False  # inside a directive whose content goes

    def reduce(self, text: str) -> str:
        """A block's text with its fence lines reduced (empty while dropping)."""
        if ":::" not in text and not self._open:
            return text
        kept: list[str] = []
        for line in text.split("\n"):
            kept.extend(self._line(line))
        return "\n".join(kept)

    def _line(self, line: str) -> list[str]:
        fence = _COLON_FENCE.fullmatch(line)
        if fence is None:
            if self._in_options and _OPTION.fullmatch(line):
                return []
            self._in_options = False
            return [] if self.dropping else [line]
        colons = len(fence.group("colons"))
        name = fence.group("braced") or fence.group("bare")
        if name is None:  # a closing fence: it closes the innermost one it is as long as
            if self._open and self._open[-1][0] <= colons:
                self._open.pop()
                self.dropping = bool(self._open) and self._open[-1][1]
            self._in_options = False
            return []
        kind = directive_kind(name)
        keeps_title = kind is Directive.TEXT and not self.dropping
        self.dropping = self.dropping or kind is Directive.DROP
        self._open.append((colons, self.dropping))
        self._in_options = True
        title = fence.group("bracketed") or fence.group("argument")
        return [title] if title and keeps_title else []


# reStructuredText (eval-rst) ---------------------------------------------------------------

_RST_DIRECTIVE = re.compile(r"(?P<indent>[ \t]*)\.\.[ \t]+(?P<name>[\w:.+-]+)::[ \t]*(?P<arg>.*)")
_RST_COMMENT = re.compile(r"[ \t]*\.\.(?:[ \t].*)?")
_RST_ROLE = re.compile(r":(?P<name>[\w:.+-]+):`(?P<content>[^`]+)`")
_RST_LINK = re.compile(r"`(?P<text>[^`<]+?)\s*<[^`>]+>`__?")


def reduce_rst(source: str) -> str:
    """reStructuredText as text: directive lines become their argument (or go, with their
    content, when the directive is navigation or generated), options and comments go, roles
    and links become their text."""
    kept: list[str] = []
    dropped_indent: int | None = None
    in_options = False
    for line in source.split("\n"):
        indent = len(line) - len(line.lstrip())
        if dropped_indent is not None and (not line.strip() or indent > dropped_indent):
            continue
        dropped_indent = None
        directive = _RST_DIRECTIVE.fullmatch(line)
        if directive:
            kind = directive_kind(directive.group("name"))
            if kind is Directive.DROP:
                dropped_indent = indent
            elif directive.group("arg") and kind is Directive.TEXT:
                kept.append(directive.group("indent") + directive.group("arg"))
            in_options = True
            continue
        if in_options and _OPTION.fullmatch(line):
            continue
        in_options = False
        if not _RST_COMMENT.fullmatch(line):
            kept.append(line)
    text = textwrap.dedent("\n".join(kept)).strip("\n")
    text = _RST_ROLE.sub(lambda match: role_text(match.group("name"), match.group("content")), text)
    return _RST_LINK.sub(lambda match: match.group("text"), text)
