"""YAML front matter of a Markdown file: ``---`` lines around a mapping, then the body.

    meta, body = parse_front_matter("---\\nname: csv-tips\\ndescription: ...\\n---\\nBody")

Shared by skills (``SKILL.md``) and by every other Markdown-with-YAML file Think reads from
``.think/`` (agent types, self-written tools' notes), so they fail with the same messages.
"""

from __future__ import annotations

from typing import Any


class FrontMatterError(ValueError):
    """The file has no front matter, or its YAML is not a mapping; the message says which."""


def parse_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The front matter mapping and the body after it (``FrontMatterError`` if malformed)."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise FrontMatterError("no front matter: the file must start with a '---' line")
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        raise FrontMatterError("the front matter is not closed by a '---' line")
    # Imported here: a session without skills never parses YAML, and its first request
    # should not pay for loading the parser.
    import yaml

    try:
        # safe_load: plain data only, never a Python object named by the file.
        meta = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise FrontMatterError(f"invalid YAML{where}: {problem}") from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise FrontMatterError("the front matter must be a YAML mapping (key: value lines)")
    return meta, "".join(lines[end + 1 :]).lstrip("\n")
