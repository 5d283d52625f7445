"""reStructuredText, as Sphinx projects write it: chunks titled with their section breadcrumb.

docutils parses the file; Sphinx's directives and roles, which docutils does not know, are read
leniently instead of becoming errors: version notes and admonitions keep their text under a
label (``Changed in version 8.0: ...``), code directives become code blocks, navigation is
dropped, autodoc directives give the API names they list, and any other directive keeps its
argument and content as text. docutils' own messages about the markup (an unknown role, an
unexpected indentation) are dropped from the tree, as Sphinx drops them from the pages it
builds. A file docutils fails on is indexed as plain text.
"""

from __future__ import annotations

import io
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import regex
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Directive, Parser, directives, roles
from docutils.statemachine import StringList
from docutils.transforms import Transform, frontmatter, references, universal
from docutils.utils import new_document

from ..models import Chunk
from .base import fenced
from .markdown import SectionChunker
from .outline import Outline
from .roles import role_text
from .text import TextChunker

_SETTINGS = {
    "report_level": 5,  # no system message printed, nor kept in the tree (FilterMessages)
    "halt_level": 5,  # never raise on a markup error
    "file_insertion_enabled": False,  # no `include` of files outside the one being indexed
    "raw_enabled": False,
    "syntax_highlight": "none",  # code stays text (no Pygments)
}


class _UndefinedSubstitutions(Transform):
    """A substitution defined in another file, or by Sphinx (``|version|``), shows its name:
    replaced before docutils' ``Substitutions``, which would make it an error."""

    default_priority = references.Substitutions.default_priority - 1

    def apply(self) -> None:
        defined = self.document.substitution_defs
        for reference in tuple(self.document.findall(nodes.substitution_reference)):
            name = reference["refname"]
            if name not in defined and name.lower() not in self.document.substitution_names:
                reference.replace_self(nodes.Text(reference.astext()))


# Of the transforms a docutils publisher runs, those the text needs: substitutions replaced,
# the leading field list made metadata, footnotes numbered, and the system messages below
# report_level (all of them) removed, with the markup they were about left as it was written.
# docutils puts a message where it met the problem, a table cell among them, and Sphinx (unless
# keep_warnings) removes them all the same way: they are not the page's text.
_TRANSFORMS = [
    _UndefinedSubstitutions,
    references.Substitutions,
    frontmatter.DocInfo,
    references.Footnotes,
    universal.FilterMessages,
]

# Directives whose content is code, with its language (None: the directive's argument).
_CODE_DIRECTIVES: dict[str, str | None] = {
    **dict.fromkeys(["code", "code-block", "sourcecode", "code-cell", "code-tab", "prompt"]),
    **dict.fromkeys(["testcode", "jupyter-execute", "click:example", "click:run"], "python"),
    **dict.fromkeys(["graphviz", "digraph", "graph"], "dot"),
    **dict.fromkeys(["testoutput", "productionlist"], ""),
    "doctest": "pycon",
    "ipython": "ipython",
    "mermaid": "mermaid",
}
# Navigation, settings for the build, and text pulled from elsewhere (docstrings, files).
_DROPPED_DIRECTIVES = frozenset(
    {
        *("toctree", "index", "highlight", "literalinclude", "program", "moduleauthor"),
        *("sectionauthor", "codeauthor", "tabularcolumns", "rst-class", "testsetup"),
        *("testcleanup", "audit-event", "audit-event-table"),  # (CPython's audit events)
    }
)
# Directives that name the module later API names are relative to (kept on the document).
_MODULE_DIRECTIVES = frozenset({"currentmodule", "module"})
_CURRENT_MODULE = "duckdb-vectors-current-module"
# Directives shown as a label before their text, as Sphinx renders them: the label takes
# the first words of the directive's argument (the versions), the rest of it is text.
_LABELS = {
    "versionadded": "Added in version {}",
    "versionchanged": "Changed in version {}",
    "versionremoved": "Removed in version {}",
    "deprecated": "Deprecated since version {}",
    "deprecated-removed": "Deprecated since version {}, will be removed in version {}",  # CPython
    "seealso": "See also",
    "todo": "Todo",
    "availability": "Availability",
    "impl-detail": "CPython implementation detail",
}
# Names docutils knows but Sphinx defines otherwise (docutils' `class` is Sphinx's `rst-class`;
# Sphinx's `pep` and `rfc` also take `Title <number>`).
_SPHINX_NAMES = frozenset({"class"})
_NUMBERED_ROLES = frozenset({"pep", "rfc"})
_CONTINUED_LINE = regex.compile(r"\\\n\s*")
_DOMAIN = regex.compile(r"^(?:py|c|cpp|js|rst|std|math):")
_NOT_TEXT = frozenset(
    {
        *("comment", "substitution_definition", "pending", "raw", "image"),
        *("transition", "decoration", "meta"),
    }
)
_PARSE_LOCK = threading.Lock()  # the lenient lookups are swapped into docutils' modules


@dataclass
class RstChunker(SectionChunker):
    """Splits reStructuredText on its sections (arguments: ``SectionChunker``'s)."""

    def chunk(self, text: str, source: str) -> list[Chunk]:
        try:
            document = _parse(text, source)
        except Exception:  # docutils' own failures (deep nesting, odd tables): keep the text
            return TextChunker(self.max_chars).chunk(text, source)
        outline = Outline()
        _Walker(outline).document(document)
        return self.pack_sections(outline.sections, outline.metadata, source)


def _parse(text: str, source: str) -> nodes.document:
    settings = get_default_settings(Parser)
    for name, value in {**_SETTINGS, "warning_stream": io.StringIO()}.items():
        setattr(settings, name, value)
    document = new_document(source, settings)
    with _sphinx_lenient():
        Parser().parse(text, document)
    document.transformer.add_transforms(_TRANSFORMS)
    document.transformer.apply_transforms()
    return document


@contextmanager
def _sphinx_lenient() -> Iterator[None]:
    """Let docutils find a directive or role for every name, as Sphinx does (it swaps the
    same two lookups); restored afterwards, so other docutils users see no change."""
    find_directive, find_role = directives.directive, roles.role

    def directive(name: str, language: Any, document: Any) -> tuple[Any, list[Any]]:
        plain = _plain_name(name)
        if plain in _CODE_DIRECTIVES or plain in _SPHINX_NAMES:  # Sphinx's meaning, options
            return _SphinxDirective, []
        found, messages = find_directive(name, language, document)
        return found or _SphinxDirective, messages

    def role(name: str, language: Any, lineno: int, reporter: Any) -> tuple[Any, list[Any]]:
        if name.lower() in _NUMBERED_ROLES:
            return _sphinx_role, []
        found, messages = find_role(name, language, lineno, reporter)
        return found or _sphinx_role, messages

    with _PARSE_LOCK:
        directives.directive, roles.role = directive, role
        try:
            yield
        finally:
            directives.directive, roles.role = find_directive, find_role


def _plain_name(name: str) -> str:
    return _DOMAIN.sub("", name.lower())


class _AnyOption(dict[str, Callable[[str | None], str]]):
    """An option spec accepting every option: Sphinx's directives have many."""

    def __missing__(self, name: str) -> Callable[[str | None], str]:
        return directives.unchanged

    def __bool__(self) -> bool:  # docutils reads options only when the spec is truthy
        return True


class _SphinxDirective(Directive):
    """Any directive docutils does not know, read by what its name says it holds."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec: ClassVar[dict[str, Any]] = _AnyOption()

    def run(self) -> list[nodes.Node]:
        name = _plain_name(self.name)
        if name in _DROPPED_DIRECTIVES:
            return []
        argument, content = self._argument_and_content()
        if name in _MODULE_DIRECTIVES:
            self.state.document[_CURRENT_MODULE] = argument
            return []
        if name.startswith("auto"):
            return self._api_names(argument, content)
        if name in _CODE_DIRECTIVES:
            code = "\n".join(content)
            language = _CODE_DIRECTIVES[name]
            if language is None:
                language = argument.split(" ", 1)[0]
            return [nodes.literal_block(code, code, language=language)] if code.strip() else []
        container = nodes.container()
        self.state.nested_parse(content, self.content_offset, container)
        if name in _LABELS:
            self._label(name, argument, container)
        elif argument:  # e.g. the signature of the function a domain directive describes
            container.insert(0, nodes.paragraph(argument, argument))
        return [container]

    def _api_names(self, argument: str, content: StringList) -> list[nodes.Node]:
        """An autodoc directive's API names, in full, as a list: their docstrings are in the
        code, not here, but a page that only lists APIs is where a question naming one should
        land."""
        module = self.state.document.get(_CURRENT_MODULE, "")
        names = [argument] if argument else []
        names += [line.strip() for line in content if line.strip() and line[:1] != ":"]
        listed = nodes.bullet_list()
        package = module.split(".")[0]
        for name in names:
            # Relative to the current module unless it starts with the module's package.
            full = f"{module}.{name}" if module and name.split(".")[0] != package else name
            listed += nodes.list_item("", nodes.paragraph(full, full))
        return [listed] if names else []

    def _argument_and_content(self) -> tuple[str, StringList]:
        """The argument, on one line, and the content. Without text after its ``::``, a
        directive has no argument: docutils, not knowing it, took the content's first
        paragraph for one (Sphinx's directives say which take arguments)."""
        directive_line, _, body = self.block_text.partition("\n")
        if not self.arguments or directive_line.partition("::")[2].strip():
            # A backslash ends a line of a long signature that goes on on the next.
            argument = _CONTINUED_LINE.sub("", self.arguments[0]) if self.arguments else ""
            return " ".join(argument.split()), self.content
        lines = textwrap.dedent(body).strip("\n").split("\n")
        return "", StringList(lines, self.content.source(0) if self.content else None)

    def _label(self, name: str, argument: str, container: nodes.container) -> None:
        """``Changed in version 3.2: <the argument's rest, then the content>``."""
        label = _LABELS[name]
        versions = label.count("{}")
        words = argument.split(" ") if argument else []
        words += [""] * (versions - len(words))
        heading = label.format(*words[:versions])
        rest = " ".join(words[versions:])
        first = container[0] if container.children else None
        if not rest and isinstance(first, nodes.paragraph):
            first.insert(0, nodes.Text(f"{heading}: "))
            return
        paragraph = nodes.paragraph("", f"{heading}: " if rest else heading)
        if rest:
            inline, _ = self.state.inline_text(rest, self.lineno)
            paragraph.extend(inline)
        container.insert(0, paragraph)


def _sphinx_role(
    name: str, rawtext: str, text: str, *_: Any, **__: Any
) -> tuple[list[nodes.Node], list[Any]]:
    """A role as the text Sphinx shows for it (``roles.role_text``); docutils' other
    arguments (line number, inliner, options, content) are not needed."""
    return [nodes.literal(rawtext, role_text(name, nodes.unescape(text)))], []


class _Blocks:
    """The blocks of a part of the document, before they go to the outline."""

    def __init__(self) -> None:
        self.blocks: list[tuple[str, bool]] = []

    def add(self, text: str, *, atomic: bool = False) -> None:
        if text.strip():
            self.blocks.append((text, atomic))


class _Walker:
    """Reads a docutils tree into an outline: sections become headings, and each paragraph,
    list, code block or table a block."""

    def __init__(self, outline: Outline) -> None:
        self.outline = outline
        self.sink: Outline | _Blocks = outline  # where blocks go: a list collects its own

    def document(self, document: nodes.document) -> None:
        for child in document.children:
            if isinstance(child, nodes.docinfo):
                self.outline.metadata.update(_docinfo(child))
            else:
                self.body(child, 0)

    def body(self, node: nodes.Node, level: int, prefix: str = "") -> None:
        """Add the blocks of ``node``; ``prefix`` (a bullet, a label) leads its first one."""
        if not isinstance(node, nodes.Element):
            self.sink.add(prefix + node.astext())
        elif node.tagname in _NOT_TEXT or "contents" in node["classes"]:
            return  # markup and generated tables of contents
        elif isinstance(node, nodes.section):
            self._section(node, level)
        elif isinstance(node, nodes.TextElement) and not isinstance(node, nodes.FixedTextElement):
            self.sink.add(prefix + inline_text(node))
        elif isinstance(node, (nodes.literal_block, nodes.doctest_block, nodes.math_block)):
            self._add_atomic(prefix, fenced(node.astext(), _language(node)))
        elif isinstance(node, nodes.line_block):
            lines = (inline_text(line) for line in node.findall(nodes.line))
            self.sink.add(prefix + "\n".join(lines))
        elif isinstance(node, nodes.table):
            self._add_atomic(prefix, _table_text(node))
        elif isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
            self._list(node, level, prefix)
        else:
            self._children(node, level, prefix + _label(node))

    def _section(self, section: nodes.section, level: int) -> None:
        titles = [child for child in section.children if isinstance(child, nodes.title)]
        if titles:
            self.outline.heading(level + 1, inline_text(titles[0]))
        for child in section.children:
            if not isinstance(child, nodes.title):
                self.body(child, level + 1)

    def _list(self, node: nodes.Element, level: int, prefix: str) -> None:
        """A list is one block, its items on consecutive lines, unless an item holds a code
        block or table: then each item is a block, so that those stay whole."""
        sink, items = self.sink, _Blocks()
        self.sink = items
        for number, item in enumerate(node.children, node.get("start", 1)):
            bullet = f"{number}. " if isinstance(node, nodes.enumerated_list) else "- "
            self.body(item, level, prefix + bullet)
            prefix = ""
        self.sink = sink
        if any(atomic for _, atomic in items.blocks):
            for text, atomic in items.blocks:
                sink.add(text, atomic=atomic)
        else:
            sink.add("\n".join(text for text, _ in items.blocks))

    def _children(self, node: nodes.Element, level: int, prefix: str) -> None:
        for child in node.children:
            if isinstance(child, (nodes.title, nodes.label)) or child.tagname in _NOT_TEXT:
                continue  # titles and labels are in the prefix
            if isinstance(child, (nodes.term, nodes.classifier, nodes.field_name)):
                prefix += inline_text(child) + ": "  # a definition or field follows its name
                continue
            if isinstance(child, nodes.option_group):
                prefix += " ".join(child.astext().split()) + ": "
                continue
            self.body(child, level, prefix)
            prefix = ""
        if prefix.strip(" -:.0123456789"):
            self.sink.add(prefix.rstrip(": "))  # a term or label with nothing after it

    def _add_atomic(self, prefix: str, text: str) -> None:
        if prefix.strip(" -:.0123456789"):  # a label, not a bullet
            self.sink.add(prefix.rstrip(": ") + ":")
        self.sink.add(text, atomic=True)


def inline_text(node: nodes.Element) -> str:
    """A paragraph's text as a reader sees it, on one line."""
    return " ".join(_inline_parts(node).split())


def _inline_parts(node: nodes.Element) -> str:
    parts = []
    for child in node.children:
        if isinstance(child, nodes.Text):
            parts.append(child.astext())
        elif child.tagname in _NOT_TEXT:
            continue
        elif isinstance(child, (nodes.footnote_reference, nodes.citation_reference)):
            parts.append(f"[{child.astext()}]")
        elif isinstance(child, nodes.Element):
            parts.append(_inline_parts(child))
    return "".join(parts)


def _label(node: nodes.Element) -> str:
    """What leads an element's text: an admonition's kind or title, a footnote's number."""
    if isinstance(node, (nodes.footnote, nodes.citation)):
        labels = [child for child in node.children if isinstance(child, nodes.label)]
        return f"[{labels[0].astext()}] " if labels else ""
    titles = [child for child in node.children if isinstance(child, nodes.title)]
    if titles:
        return inline_text(titles[0]) + ": "
    if isinstance(node, nodes.Admonition):
        return node.tagname.replace("_", " ").capitalize() + ": "
    return ""


def _language(node: nodes.Element) -> str:
    if isinstance(node, nodes.doctest_block):
        return "pycon"
    if isinstance(node, nodes.math_block):
        return "latex"
    classes = [name for name in node.get("classes", []) if name != "code"]
    return node.get("language") or (classes[0] if classes else "")


def _table_text(table: nodes.table) -> str:
    """A table as lines of cells separated by `` | ``, its title first."""
    lines = [inline_text(title) for title in table.children if isinstance(title, nodes.title)]
    for row in table.findall(nodes.row):
        cells = [" ".join(_cell_text(entry).split()) for entry in row.children]
        lines.append(" | ".join(cells))
    return "\n".join(lines)


def _cell_text(entry: nodes.Element) -> str:
    return " ".join(
        inline_text(part) if isinstance(part, nodes.TextElement) else part.astext()
        for part in entry.children
    )


def _docinfo(docinfo: nodes.docinfo) -> dict[str, str]:
    """File-wide fields (``:author:``, Sphinx's ``:orphan:``) as metadata, not text."""
    fields: dict[str, str] = {}
    for child in docinfo.children:
        if isinstance(child, nodes.field) and len(child.children) == 2:
            fields[child[0].astext()] = " ".join(child[1].astext().split())
        elif isinstance(child, nodes.Element):
            fields[child.tagname] = " ".join(child.astext().split())
    return fields
