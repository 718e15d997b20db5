"""Model-facing names of MCP tools: ``server__tool``, within what endpoints accept.

OpenAI-compatible endpoints take tool names of ``[A-Za-z0-9_-]{1,64}``; MCP servers name
their tools more freely (dots, slashes, long names). Pure:

    tool_name("git hub", "repos.list", taken=set())   # "git_hub__repos_list"
"""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 64
SEP = "__"
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def clean(part: str) -> str:
    """A name part with every character endpoints refuse replaced by ``_``."""
    return _BAD.sub("_", part) or "_"


def tool_name(server: str, tool: str, taken: set[str]) -> str:
    """``server__tool``, cut to 64 characters (with a short hash of the whole name when cut)
    and made unique among ``taken`` (which it joins)."""
    name = f"{clean(server)}{SEP}{clean(tool)}"
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9]}_{digest}"
    base, n = name, 2
    while name in taken:
        suffix = f"_{n}"
        name = base[: MAX_NAME - len(suffix)] + suffix
        n += 1
    taken.add(name)
    return name
