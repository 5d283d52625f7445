"""HTML pages as documentation generators build them: the main content's text (the first of
``_CONTENT`` the page has), chunked under its heading breadcrumb, without the site's navigation,
sidebars and scripts. ``<pre>`` blocks stay whole as code, tables become lines of
`` | ``-separated cells. A page with (almost) no text besides its links (a generated index, a
search page, a redirect) is skipped. Parsed by selectolax, which keeps the tree as it is, where
content extractors (trafilatura, jusText) flatten headings and code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import regex
from selectolax.lexbor import LexborHTMLParser, LexborNode

from ..errors import SkipFile
from ..models import Chunk
from .base import fenced
from .markdown import SectionChunker
from .outline import Outline

# Where the page's own content is, most specific first.
_CONTENT = ("article.md-content__inner", "[role=main]", "div.body", "main", "article", "body")
# Inside the content: what a reader of the text does not need.
_NOISE = ", ".join(
    [
        "script, style, noscript, template, svg, canvas, iframe, object",
        "button, form, input, select, textarea",
        "nav, footer, [role=navigation], [role=search], .related, .sphinxsidebar",
        ".navbar, .modal, [role=dialog], [role=banner], [role=contentinfo]",
        "a.headerlink, .linenos, .toctree-wrapper",  # permalinks, line numbers, Sphinx's toctree
        "table.indextable, table.modindextable",  # Sphinx's generated index pages
        ".md-content__button, .md-source-file",  # MkDocs Material's edit button, page dates
    ]
)
# Around the content of a page with no marked main part: its header and sidebars.
_PAGE_CHROME = "body > header, aside, .sidebar, [role=complementary]"
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = frozenset(
    {"address", "article", "aside", "blockquote", "center", "details", "dialog", "dd", "div"}
    | {"dl", "dt", "fieldset", "figcaption", "figure", "header", "hgroup", "li", "main", "ol"}
    | {"p", "section", "summary", "ul"}
)
_LANGUAGE = regex.compile(r"(?:^|\s)(?:highlight|language|lang)-([\w+#.-]+)")
_PLAIN_LANGUAGES = frozenset({"default", "none", "text", "plain", "plaintext"})
# Fewer letters outside links, headings and code make a navigation page. Letters, not words,
# so that it holds for scripts written without spaces.
MIN_PROSE_LETTERS = 100
_NOT_PROSE = frozenset({"a", "pre", *_HEADINGS})
_LETTER = regex.compile(r"\p{L}")


@dataclass
class HtmlChunker(SectionChunker):
    """Splits an HTML page's main content on its headings (see ``SectionChunker`` for the
    other arguments).

    Args:
        min_prose_letters: pages with fewer letters outside links, headings and code are
            skipped as navigation.
    """

    min_prose_letters: int = MIN_PROSE_LETTERS

    def chunk(self, text: str, source: str) -> list[Chunk]:
        page = LexborHTMLParser(text)  # the parser makes a body for any text, as browsers do
        content = next(node for s in _CONTENT if (node := page.css_first(s)) is not None)
        noise = _NOISE if content.tag != "body" else f"{_NOISE}, {_PAGE_CHROME}"
        for node in content.css(noise):
            node.decompose()
        if _prose_letters(content) < self.min_prose_letters:
            raise SkipFile("no prose, only navigation (an index, search or redirect page)")
        title = page.css_first("head > title")
        reader = _Reader(Outline(root=(_text(title) if title else "") or None))
        reader.walk(content)
        reader.flush()
        return self.pack_sections(reader.outline.sections, {}, source)


@dataclass
class _Reader:
    """Walks the content in document order, gathering inline text into blocks."""

    outline: Outline
    lines: list[list[str]] = field(default_factory=lambda: [[]])
    prefix: str = ""  # an admonition's title, leading the next block

    def walk(self, node: LexborNode) -> None:
        for child in node.iter(include_text=True):
            tag = child.tag
            if tag == "-text":
                self.lines[-1].append(child.text_content or "")
            elif tag in _HEADINGS:
                self.flush()
                self.outline.heading(_HEADINGS[tag], _text(child))
            elif tag == "pre":
                self.flush()
                self._atomic(fenced(child.text(deep=True, separator=""), _language(child)))
            elif tag == "table" and child.css_first("pre") is None:  # else a layout table
                self.flush()
                self._atomic(_table_text(child))
            elif tag == "br":
                self.lines.append([])
            elif tag in ("ul", "ol") and child.css_first("pre, table") is None:
                self.flush()
                self._add(_list_text(child, ""))
            elif "admonition-title" in (child.attributes.get("class") or ""):
                self.flush()
                self.prefix = _text(child) + ": "
            elif tag == "li":
                self.flush()
                self.lines[-1].append("- ")
                self.walk(child)
                self.flush()
            elif tag in _BLOCKS or tag == "table":
                self.flush()
                self.walk(child)
                self.flush()
            elif tag != "-comment":
                self.walk(child)

    def flush(self) -> None:
        """End the current block."""
        text = "\n".join(" ".join("".join(line).split()) for line in self.lines).strip()
        self.lines = [[]]
        self._add(text)

    def _add(self, text: str) -> None:
        if text.strip(" -"):
            self.outline.add(self.prefix + text)
            self.prefix = ""

    def _atomic(self, text: str) -> None:
        if self.prefix:
            self.outline.add(self.prefix.rstrip(" "))
            self.prefix = ""
        self.outline.add(text, atomic=True)


def _prose_letters(node: LexborNode) -> int:
    count = 0
    for child in node.iter(include_text=True):
        if child.tag == "-text":
            count += len(_LETTER.findall(child.text_content or ""))
        elif child.tag not in _NOT_PROSE:
            count += _prose_letters(child)
    return count


def _text(node: LexborNode) -> str:
    """An element's text on one line."""
    return " ".join(node.text(deep=True, separator="").split())


def _language(pre: LexborNode) -> str:
    """The code's language, from the classes highlighters put on it or around it."""
    candidates = [pre, pre.css_first("code"), pre.parent, pre.parent and pre.parent.parent]
    for node in candidates:
        match = _LANGUAGE.search(node.attributes.get("class") or "") if node else None
        if match:
            return "" if match.group(1) in _PLAIN_LANGUAGES else match.group(1)
    return ""


def _table_text(table: LexborNode) -> str:
    lines = [_text(caption) for caption in table.css("caption")]
    for row in table.css("tr"):
        lines.append(" | ".join(_text(cell) for cell in row.css("th, td")))
    return "\n".join(line for line in lines if line.strip(" |"))


def _list_text(node: LexborNode, indent: str) -> str:
    """A list, an item a line, nested lists indented under their item."""
    lines = []
    items = [child for child in node.iter() if child.tag == "li"]
    for number, item in enumerate(items, 1):
        bullet = f"{number}. " if node.tag == "ol" else "- "
        own: list[str] = []
        nested: list[str] = []
        for child in item.iter(include_text=True):
            if child.tag in ("ul", "ol"):
                nested.append(_list_text(child, indent + "  "))
            elif child.tag == "-text":
                own.append(child.text_content or "")
            else:
                own.append(child.text(deep=True, separator=""))
        lines.append(indent + bullet + " ".join("".join(own).split()))
        lines.extend(text for text in nested if text)
    return "\n".join(lines)
