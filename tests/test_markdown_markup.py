"""Markup reduction in the Markdown chunkers, rule by rule (the real trees are in
test_markdown_trees.py): what goes, what stays, and that code is never touched."""

from __future__ import annotations

import pytest

from duckdb_vectors.chunkers import MarkdownChunker, MdxChunker, default_chunker
from duckdb_vectors.chunkers.navigation import link_share, links_within

JINJA_TUTORIAL = """# Templates

Write {% if user %}a greeting{% endif %} with `{{ user.name }}` in it.{# a comment #}

```jinja
{% for item in items %}
  <li>{{ item }}</li>
{% endfor %}
```
"""


def texts(markdown: str, chunker: MarkdownChunker | None = None, source: str = "a.md") -> str:
    return "\n\n".join(
        chunk.text for chunk in (chunker or MarkdownChunker()).chunk(markdown, source)
    )


def test_template_tags_go_from_prose_but_never_from_code() -> None:
    text = texts(JINJA_TUTORIAL)
    assert "Write a greeting with `{{ user.name }}` in it." in text
    assert "{% for item in items %}\n  <li>{{ item }}</li>\n{% endfor %}" in text
    assert "{#" not in text


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("See [the guide]({% link docs/guide.md %}).", "See [the guide](docs/guide.md)."),
        ("Read [it]({% post_url 2024-05-31-trains %}).", "Read [it](2024-05-31-trains)."),
        ('See [setup]({{< ref "setup.md" >}}).', "See [setup](setup.md)."),
        ("{{% notice tip %}}Back up first.{{% /notice %}}", "Back up first."),
        ("Version {{ site.version }} is out.", "Version  is out."),
        ("{% comment %}draft{% endcomment %}Done.", "Done."),
    ],
)
def test_a_template_tag_naming_a_page_leaves_the_page(markdown: str, expected: str) -> None:
    assert texts(markdown) == expected


def test_html_is_reduced_to_its_text_and_pre_is_never_cut() -> None:
    html = "<div class='note'>\n<p>Use <b>bold</b> &amp; <img src='x.png' alt='a chart'>.</p>\n"
    html += "<script>track();</script>\n</div>\n\n<!-- editor's note -->\n\nAfter."
    assert texts(html) == "Use bold & a chart.\n\nAfter."
    listing = "<pre><code>" + "int x = 1;\n" * 30 + "</code></pre>"
    assert [chunk.text for chunk in MarkdownChunker(max_chars=100).chunk(listing, "c.md")] == [
        ("int x = 1;\n" * 30).strip()
    ]


def test_myst_directive_fences_in_list_items_and_colon_fences() -> None:
    markdown = """# Setup

- Install it:

  ```{code-block} bash
  :caption: shell
  pip install thing
  ```

:::{toctree}
:maxdepth: 2
hidden/page
:::

::::{tab-set}
:::{tab-item} Linux
Use {kbd}`Ctrl+C` and {py:func}`~thing.stop`.
:::
::::
"""
    text = texts(markdown)
    assert "```bash\npip install thing\n```" in text and ":caption:" not in text
    assert "hidden/page" not in text and "maxdepth" not in text
    assert "Linux\nUse Ctrl+C and stop." in text


def test_mdx_drops_module_blocks_and_comments_where_markdown_keeps_text() -> None:
    mdx = "import Tabs from '@theme/Tabs';\n\n{/* internal */}\n\n"
    mdx += "<Tabs>\n\n    Indented.\n\n</Tabs>\n"
    assert texts(mdx, MdxChunker(), "a.mdx") == "Indented."  # MDX has no indented code
    markdown = texts(mdx)
    assert "import Tabs from '@theme/Tabs';" in markdown and "    Indented." in markdown
    chunker = default_chunker()
    assert chunker.mime_type("docs/intro.mdx") == "text/mdx"
    assert isinstance(chunker.chunkers["text/mdx"], MdxChunker)


def test_markup_can_be_kept_as_written() -> None:
    chunks = MarkdownChunker(reduce_markup=False).chunk(JINJA_TUTORIAL, "a.md")
    assert "Write {% if user %}a greeting{% endif %}" in chunks[0].text


def test_link_share_and_where_links_go() -> None:
    links = "* [Install](install.md)\n* [Upgrade](upgrade.md#notes)"
    assert link_share(links) == 1.0 and links_within(links)
    assert link_share("Read [the guide](guide.md) before you start today.") == 2 / 7
    assert not links_within("* [Paper](https://example.org/paper.pdf)\n* [Notes](notes.md)")
