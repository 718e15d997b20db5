"""think-guard: an example Think extension made of two lifecycle hooks.

- ``BlockCommands`` refuses ``bash`` calls whose command matches a pattern (by default
  ``rm -rf`` on an absolute path and ``git push``); the model reads why, as the call's result.
- ``DataDictionary`` appends the project's ``DATA_DICTIONARY.md`` (at the workspace root) to
  the system message of every model call, so column names and units are always at hand.

Settings come from the environment of the kernel: ``THINK_GUARD_BLOCK`` (patterns, one per
line) and ``THINK_GUARD_DICTIONARY`` (the file, relative to the workspace).

    pip install ./examples/think-guard      # then restart the kernels
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from think_kernel.hooks import Hook, ModelCall, ModelChange, ToolUse, ToolVerdict
from think_kernel.layers import AgentExtension

DEFAULT_BLOCK = (r"\brm\s+-[a-zA-Z]*r[a-zA-Z]*f?\s+/", r"\bgit\s+push\b")
#: Characters of the dictionary sent with each call; a longer file is cut.
DICTIONARY_MAX = 8000


class BlockCommands(Hook):
    """Blocks ``bash`` commands that match one of the patterns."""

    name = "block-commands"

    def __init__(self, patterns: list[str] | None = None) -> None:
        if patterns is None:
            raw = os.environ.get("THINK_GUARD_BLOCK", "")
            patterns = [p for p in raw.splitlines() if p.strip()] or list(DEFAULT_BLOCK)
        self.patterns = [re.compile(p) for p in patterns]

    async def before_tool(self, call: ToolUse) -> ToolVerdict | None:
        """Block a matching bash command; say nothing about any other call."""
        if call.tool != "bash" or not isinstance(call.arguments, dict):
            return None
        command = str(call.arguments.get("command") or "")
        for pattern in self.patterns:
            if pattern.search(command):
                return ToolVerdict.block(
                    f"this project does not allow commands matching `{pattern.pattern}`; "
                    "ask the user to run it themselves if it is really needed"
                )
        return None


class DataDictionary(Hook):
    """Adds the workspace's data dictionary to every model call."""

    name = "data-dictionary"

    def __init__(self, filename: str | None = None) -> None:
        self.filename = filename or os.environ.get("THINK_GUARD_DICTIONARY", "DATA_DICTIONARY.md")

    async def before_model(self, call: ModelCall) -> ModelChange | None:
        """The file's text as context (None when the workspace has none)."""
        path = Path(call.workspace) / self.filename
        try:
            text = path.read_text(encoding="utf-8")[:DICTIONARY_MAX]
        except (FileNotFoundError, NotADirectoryError):
            return None
        return ModelChange(context=f"# Data dictionary ({self.filename})\n{text.strip()}")


class GuardExtension(AgentExtension):
    """The extension Think loads (see ``pyproject.toml``): its hooks run in this order."""

    name = "think-guard"
    hooks = [BlockCommands(), DataDictionary()]
