"""MkDocs hook: ``<!-- include README.md#Heading -->`` on a line of its own is replaced by that
section of the file (its body, without the heading; subheadings lifted one level), so a page
can show the README's text without a hand-made copy that drifts.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MARK = re.compile(r"^<!-- include (?P<file>[^#\s]+)#(?P<heading>[^>]+?) -->$", re.M)


class MissingSection(Exception):
    """The named file or heading does not exist (the build fails rather than show nothing)."""


def section(text: str, heading: str) -> str:
    """The body of the Markdown section titled ``heading`` (to the next heading of its level)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(#+) (.*)$", line)
        if m and m.group(2).strip() == heading:
            level = len(m.group(1))
            body: list[str] = []
            fenced = False
            for rest in lines[i + 1 :]:
                if rest.startswith("```"):
                    fenced = not fenced
                h = re.match(r"^(#+) ", rest)
                if h and not fenced and len(h.group(1)) <= level:
                    break
                if h and not fenced:
                    rest = rest[1:] if len(h.group(1)) > 2 else rest
                body.append(rest)
            return "\n".join(body).strip() + "\n"
    raise MissingSection(f"no heading {heading!r}")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each include marker with the section it names."""

    def repl(m: re.Match[str]) -> str:
        path = ROOT / m.group("file")
        if not path.is_file():
            raise MissingSection(f"{page.file.src_uri}: no file {m.group('file')}")
        return section(path.read_text(encoding="utf-8"), m.group("heading").strip())

    return MARK.sub(repl, markdown)
