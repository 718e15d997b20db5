"""The memory file: notes a person keeps for the agent, in every session's system prompt.

    notes = MemoryFile(MemoryConfig())   # <jupyter data dir>/think/MEMORY.md by default
    notes.prompt()                       # "## Memory ..." ("" while the file is empty)
    line = notes.append("The team stores results as Parquet")   # what remember() does
    notes.remove(line)                   # what %think_memory undo does

The file is the person's: plain Markdown they may edit at any time, read again at every
request (a stat and a small read). The agent adds to it only through the ``remember`` tool,
one dated line at a time, appended (``O_APPEND``: two kernels adding at once both land); the
person sees each addition as a tool call and takes it back with ``%think_memory undo``. It
lives in the user-level Think folder, beside user-level skills: outside every workspace, so
sandboxed code can neither read nor plant it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from traitlets import Int, Unicode
from traitlets.config import Configurable

from ..skills.places import user_think_dir

NAME = "MEMORY.md"
#: Characters of one remembered note: a line the action log keeps whole, so it can be undone.
MAX_NOTE_CHARS = 170

HEADER = """\
## Memory
Notes the person keeps for you across sessions and workspaces (their file {path}). Use them;
add a durable fact, preference or decision with remember(text), only when it will matter in
later sessions. To find what was said or done in earlier sessions, use search_sessions(query).
"""


class MemoryConfig(Configurable):
    """Where the memory file is and how much of it reaches the model."""

    path = Unicode(
        "",
        config=True,
        help="The memory file. Default: '' (MEMORY.md in the user-level Think folder, "
        "<jupyter data dir>/think/MEMORY.md).",
    )
    prompt_max_chars = Int(
        8_000,
        config=True,
        help="Characters of the memory file in the system prompt; past it the newest lines "
        "are kept and a note says so. Default: 8000.",
    )


class MemoryFile:
    """The user-level memory file: read for the prompt, appended to by ``remember``."""

    def __init__(self, config: MemoryConfig | None = None, path: Path | None = None) -> None:
        self.config = config or MemoryConfig()
        self.path = path or (
            Path(self.config.path).expanduser() if self.config.path else user_think_dir() / NAME
        )

    def read(self) -> str:
        """The whole file ("" when there is none)."""
        try:
            return self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def prompt(self) -> str:
        """The system prompt's memory section ("" when the file is empty or missing)."""
        try:
            text = self.read().strip()
        except OSError as e:
            return f"## Memory\n(the memory file {self.path} could not be read: {e.strerror})\n"
        if not text:
            return ""
        limit = max(0, self.config.prompt_max_chars)
        if len(text) > limit:
            # The newest notes are at the end: keep those.
            cut = text[len(text) - limit :]
            cut = cut[cut.find("\n") + 1 :] if "\n" in cut else cut
            text = (
                f"[older notes left out: the file has {len(text)} characters, "
                f"c.MemoryConfig.prompt_max_chars is {limit}]\n{cut}"
            )
        return HEADER.format(path=self.path) + f"\n<memory>\n{text}\n</memory>\n"

    def append(self, note: str) -> str:
        """Add one dated line for ``note`` (one line, at most ``MAX_NOTE_CHARS``); return it.

        ValueError says what is wrong with an empty or too long note."""
        text = " ".join(note.split())
        if not text:
            raise ValueError("nothing to remember: the text is empty")
        if len(text) > MAX_NOTE_CHARS:
            raise ValueError(
                f"a note is at most {MAX_NOTE_CHARS} characters (this one has {len(text)}): "
                "remember one short fact at a time"
            )
        line = f"- {time.strftime('%Y-%m-%d')}: {text}"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        before = self.read()
        lead = "\n" if before and not before.endswith("\n") else ""
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{lead}{line}\n".encode())
        finally:
            os.close(fd)
        return line

    def remove(self, line: str) -> bool:
        """Take out the last line equal to ``line``; False when the file has none (the
        person removed or changed it already)."""
        lines = self.read().splitlines(keepends=True)
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].rstrip("\r\n") == line:
                del lines[i]
                tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
                tmp.write_text("".join(lines), encoding="utf-8")
                os.chmod(tmp, 0o600)
                tmp.replace(self.path)
                return True
        return False

    def status(self) -> str:
        """``%think_status``'s row: where the file is and how much it holds."""
        try:
            text = self.read()
        except OSError as e:
            return f"`{self.path}`: **unreadable** ({e.strerror})"
        count = sum(1 for ln in text.splitlines() if ln.strip())
        if not count:
            return f"`{self.path}` (empty; `%think_memory` shows it)"
        return f"`{self.path}` ({count} lines in every prompt; `%think_memory` shows it)"
