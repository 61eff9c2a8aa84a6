"""MkDocs hook (``hooks:`` in mkdocs.yml): fills docs/cli.md with every command's help, from the parser."""

from __future__ import annotations

MARKER = "<!-- cli-reference -->"


def on_page_markdown(markdown, page, **kwargs):
    if page.file.src_uri != "cli.md":
        return markdown
    from dpadapt.cli.reference import markdown as reference

    if MARKER not in markdown:
        raise ValueError(f"docs/cli.md lost its marker {MARKER}")
    return markdown.replace(MARKER, reference())
