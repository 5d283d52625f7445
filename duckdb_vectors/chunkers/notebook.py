"""Jupyter notebooks, chunked as the Markdown document they read as: markdown cells as
written, code cells as fenced blocks in the kernel's language, under the notebook's title (its
metadata's, else its first heading). Raw cells are left out, and so are outputs unless asked
for: then the text/plain ones follow their cell.

Read with the json module: nbformat's schema validation would only turn a notebook that is odd
but readable into a skipped file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import regex
import yaml

from ..errors import SkipFile
from ..models import Chunk
from .base import DEFAULT_MAX_CHARS, fenced
from .markdown import MarkdownChunker

_ANSI_ESCAPE = regex.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # colours in printed output
_HEADING = regex.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", regex.MULTILINE)


@dataclass
class NotebookChunker:
    """Splits a notebook (nbformat 4) on the headings of its markdown cells.

    Args:
        max_chars: the largest chunk, in characters (a lone code block may exceed it).
        include_outputs: also index the text/plain outputs of code cells.
    """

    max_chars: int = DEFAULT_MAX_CHARS
    include_outputs: bool = False

    def chunk(self, text: str, source: str) -> list[Chunk]:
        notebook = _load(text)
        language = _language(notebook.get("metadata"))
        parts = []
        for cell in notebook["cells"]:
            if not isinstance(cell, dict):
                continue
            kind, cell_source = cell.get("cell_type"), _joined(cell.get("source"))
            if kind == "markdown":
                parts.append(cell_source)
            elif kind == "code":
                parts.append(fenced(cell_source, language) if cell_source.strip() else "")
                if self.include_outputs:
                    parts.extend(fenced(output, "text") for output in _text_outputs(cell))
        document = "\n\n".join(part.strip("\n") for part in parts if part.strip())
        title = _title(notebook.get("metadata"), document)
        if title:  # as front matter, which the Markdown chunker takes the title from
            document = f"---\n{yaml.safe_dump({'title': title}, allow_unicode=True)}---\n{document}"
        return MarkdownChunker(self.max_chars).chunk(document, source)


def _load(text: str) -> dict[str, Any]:
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as error:
        raise SkipFile(f"not a valid notebook: invalid JSON ({error})") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        version = notebook.get("nbformat") if isinstance(notebook, dict) else None
        if isinstance(version, int) and version < 4:
            raise SkipFile(
                f"nbformat {version} notebook; upgrade it with `jupyter nbconvert --to notebook`"
            )
        raise SkipFile("not a valid notebook: no list of cells")
    return notebook


def _joined(value: Any) -> str:
    """Text that nbformat stores as a string or as a list of lines."""
    if isinstance(value, list):
        return "".join(part for part in value if isinstance(part, str))
    return value if isinstance(value, str) else ""


def _title(metadata: Any, document: str) -> str | None:
    title = metadata.get("title") if isinstance(metadata, dict) else None
    if isinstance(title, str) and title.strip():
        return title.strip()
    heading = _HEADING.search(document)
    return heading.group(1) if heading else None


def _language(metadata: Any) -> str:
    if not isinstance(metadata, dict):
        return ""
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        entry = metadata.get(key)
        if isinstance(entry, dict) and isinstance(entry.get(field), str):
            return entry[field]
    return ""


def _text_outputs(cell: dict[str, Any]) -> list[str]:
    """Printed text and text/plain results of a code cell, in order."""
    texts = []
    outputs = cell.get("outputs")
    for output in outputs if isinstance(outputs, list) else []:
        if not isinstance(output, dict):
            continue
        if output.get("output_type") == "stream":
            text = _joined(output.get("text"))
        else:
            data = output.get("data")
            text = _joined(data.get("text/plain")) if isinstance(data, dict) else ""
        text = _ANSI_ESCAPE.sub("", text)
        if text.strip():
            texts.append(text)
    return texts
