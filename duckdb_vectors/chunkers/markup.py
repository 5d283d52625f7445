"""HTML and JSX in Markdown text (code masked), reduced to what a reader of the page sees.

Tags go, their text stays: ``<b>bold</b>`` is ``bold``. Comments and ``<script>``/``<style>``
elements go with their content. A component's (capitalised or dotted name) string props are
kept, since in MDX they carry content (``<PropertiesTable content={[{name: 'api', ...}]} />``),
but not those that say how or where it is drawn (``className``, ``href``, ``size``...). An HTML
element's attributes are presentation and links, ``alt`` aside.
"""

from __future__ import annotations

import html
import re

# Plain HTML tags (attributes of quoted strings and bare words) are removed by regex
# substitutions, without a Python call per tag: docs hold tens of thousands.
_ATTRIBUTES = r"""(?:\s+[^\s"'<>/={}]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`{}]+))?)*\s*/?>"""
_INLINE_ELEMENTS = (
    "a abbr b bdi bdo cite code data del dfn em i ins kbd mark q s samp small span strong sub "
    "sup time u var wbr"
)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_DROPPED_ELEMENT = re.compile(r"<(script|style)\b[^>]*>.*?</\1\s*>", re.DOTALL | re.IGNORECASE)
_INLINE_TAG = re.compile(rf"</?(?:{_INLINE_ELEMENTS.replace(' ', '|')})(?=[\s/>]){_ATTRIBUTES}")
_BLOCK_TAG = re.compile(rf"</?(?!img\b)[a-z][\w-]*(?=[\s/>]){_ATTRIBUTES}")  # -> a line break
# Whatever is left: components, tags with {expression} props, img (its alt text is kept).
_TAG_START = re.compile(r"<(/?)(?:([A-Za-z][\w.-]*)(?=[\s/>])|(?=>))")
_PLAIN_END = re.compile(_ATTRIBUTES)
_STRING = re.compile(r""""([^"\\]*(?:\\.[^"\\]*)*)"|'([^'\\]*(?:\\.[^'\\]*)*)'|`([^`]*)`""")
_PROP = re.compile(r"""\s*([^\s"'<>/={}]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s"'=<>`{}]+|(?=\{)))?""")
_COMPONENT_START = re.compile(r"<[A-Z][\w.]*(?=[\s/>])")
_TRUNCATED = -2  # the text ended inside a tag
_TAG_STOP = re.compile(r"[\"'`{<>]")
_EXPRESSION_STOP = re.compile(r"[\"'`{}]")
_ALT = re.compile(r"""\balt\s*=\s*(?:"([^"]*)"|'([^']*)')""")
# Props that say how or where a component is drawn, not what it says.
_PRESENTATION_PROPS = frozenset(
    {
        *("class", "className", "style", "id", "key", "ref", "slot", "variant", "icon"),
        *("width", "height", "size", "color", "src", "href", "to", "target", "rel"),
        *("value", "language", "lang"),
    }
)
_HINT = re.compile(r"<[A-Za-z/!>]|&[#\w]+;")
_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n){2,}")  # left where tags stood alone on lines


def strip_markup(text: str) -> str:
    """Text without HTML/JSX tags and comments, with HTML entities decoded."""
    if not _HINT.search(text):
        return text
    if "<" in text:
        text = _COMMENT.sub("", text) if "<!--" in text else text
        text = _DROPPED_ELEMENT.sub("", text)
        text = _BLOCK_TAG.sub("\n", _INLINE_TAG.sub("", text))
        text = _strip_other_tags(text) if _TAG_START.search(text) else text
        text = _BLANK_LINES.sub("\n\n", text)
    return html.unescape(text) if "&" in text else text


def _strip_other_tags(text: str) -> str:
    pieces: list[str] = []
    position = 0
    while (match := _TAG_START.search(text, position)) is not None:
        pieces.append(text[position : match.start()])
        replacement, position = _reduce_tag(text, match)
        pieces.append(replacement)
    pieces.append(text[position:])
    return "".join(pieces)


def _reduce_tag(text: str, match: re.Match[str]) -> tuple[str, int]:
    """What replaces the tag at ``match``, and where the text after it starts."""
    closing, name = match.group(1), match.group(2) or ""
    plain = _PLAIN_END.match(text, match.end())
    end = plain.end() if plain else _tag_end(text, match.end())
    if end < 0:  # not a tag after all ("a <b" in prose): keep the character
        return "<", match.start() + 1
    component = name[:1].isupper() or "." in name
    if closing or not name:  # a component's closing tag often ends a line of prose
        return ("" if component or not name else "\n"), end
    attributes = text[match.end() : end]
    if component:
        strings = _prop_strings(attributes)
        return ("\n" + "\n".join(strings) + "\n" if strings else ""), end
    alt = _ALT.search(attributes)
    return (alt.group(1) or alt.group(2) or "" if alt else ""), end


def ends_inside_a_tag(text: str) -> bool:
    """Whether the text ends inside a component's tag: in MDX, props (a template literal, an
    array of objects) may run on past a blank line, where Markdown would end a block."""
    return any(
        _tag_end(text, match.end()) == _TRUNCATED for match in _COMPONENT_START.finditer(text)
    )


def _tag_end(text: str, start: int) -> int:
    """The end of a tag whose props hold ``{...}`` expressions; -1 if it is not a tag,
    ``_TRUNCATED`` if the text ends inside it."""
    position = start
    while (stop := _TAG_STOP.search(text, position)) is not None:
        character = stop.group(0)
        if character == ">":
            return stop.end()
        if character == "<":
            return -1
        position = _skip(text, stop.start())
        if position < 0:
            return position
    return _TRUNCATED


def _skip(text: str, start: int) -> int:
    """The end of the string literal or the balanced ``{...}`` expression at ``start``;
    ``_TRUNCATED`` if the text ends first."""
    if text[start] != "{":
        string = _STRING.match(text, start)
        return string.end() if string else _TRUNCATED
    depth = 0
    position = start
    while (stop := _EXPRESSION_STOP.search(text, position)) is not None:
        character = stop.group(0)
        if character in "{}":
            depth += 1 if character == "{" else -1
            position = stop.end()
            if depth == 0:
                return position
            continue
        position = _skip(text, stop.start())
        if position < 0:
            return position
    return _TRUNCATED


def _prop_strings(attributes: str) -> list[str]:
    """The string literals of a component's props (in ``{...}`` expressions too), in order,
    except those of presentation props."""
    strings: list[str] = []
    position = 0
    while position < len(attributes):
        prop = _PROP.match(attributes, position)
        if prop is None or prop.end() == position:
            position += 1
            continue
        name, value = prop.group(1), prop.group(2)
        position = prop.end()
        if attributes.startswith("{", position):
            expression_end = _skip(attributes, position)
            expression_end = expression_end if expression_end > 0 else len(attributes)
            if name not in _PRESENTATION_PROPS:
                strings.extend(_string_values(attributes[position:expression_end]))
            position = expression_end
        elif value and value[0] in "\"'" and name not in _PRESENTATION_PROPS:
            strings.append(value[1:-1])
    return [string.strip() for string in strings if string.strip()]


def _string_values(expression: str) -> list[str]:
    return [
        next(g for g in match.groups() if g is not None) for match in _STRING.finditer(expression)
    ]
