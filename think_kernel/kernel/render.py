"""Agent events -> Markdown for a cell: pure, shared by the think kernel and the ``%think`` magics.

    view = Transcript()
    for event in events:
        view.feed(event, now=time.monotonic())
    markdown = view.render(now=time.monotonic())    # live: with the status line
    markdown = view.render(final=True)              # saved notebook: clean Markdown

Blocks keep event order: reasoning (collapsed in ``<details>``), answer text, one line per tool
call (name, short arguments, ok / error, duration, summary), live tool output while a tool runs,
errors as a plain message (never a traceback). The status line (thinking / executing / waiting
with a retry countdown) is shown only while the run is live. ``nbconvert --to markdown`` keeps
the final text as it is, so a saved notebook reads like a chat transcript.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..agent.events import (
    Chat,
    ErrorEvent,
    Event,
    Reasoning,
    StatusEvent,
    TextDelta,
    TextDone,
    ToolCall,
    ToolProgress,
    ToolResult,
)

ARG_CHARS = 60
SUMMARY_CHARS = 120
PROGRESS_LINES = 12
PROGRESS_CHARS = 2000
_RETRY_IN = re.compile(r"in ([0-9.]+) s$")
# Arguments that name what a tool works on; shown first and bare (`hello.py`, not path=...).
_SUBJECT_KEYS = ("path", "command", "url", "code", "query", "cell_id")


def code_span(text: str) -> str:
    """Inline code that survives backticks inside ``text``."""
    text = text.replace("\n", " ")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short_args(args: Any) -> str:
    """A one-line summary of tool arguments: the subject first, content by size, clipped."""
    if not isinstance(args, dict):
        return _clip(f"{args!r}" if not isinstance(args, str) else args, ARG_CHARS)
    parts: list[str] = []
    keys = sorted(args, key=lambda k: (k not in _SUBJECT_KEYS, list(args).index(k)))
    for key in keys:
        value = args[key]
        if value is None:
            continue
        if isinstance(value, str) and ("\n" in value or len(value) > ARG_CHARS):
            if key in _SUBJECT_KEYS and not parts:
                parts.append(_clip(value, ARG_CHARS))
            else:
                parts.append(f"{key}=<{value.count(chr(10)) + 1} lines>")
        elif key in _SUBJECT_KEYS and not parts:
            parts.append(str(value))
        else:
            parts.append(f"{key}={json.dumps(value, default=str)}")
    return _clip(", ".join(parts), ARG_CHARS)


def _duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


@dataclass
class _Block:
    kind: str  # reasoning | text | tool | error | note
    key: str = ""
    text: str = ""
    tool: dict[str, Any] = field(default_factory=dict)


class Transcript:
    """The state of one cell's run, built from events; ``render`` gives its Markdown."""

    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        self._index: dict[tuple[str, str], _Block] = {}
        self.status: str = "thinking"
        self.detail: str = ""
        self.wait_until: float | None = None
        self.done = False
        self.final_text = ""
        self.error: ErrorEvent | None = None

    def _block(self, kind: str, key: str) -> _Block:
        found = self._index.get((kind, key))
        if found is None:
            found = _Block(kind, key)
            self._index[(kind, key)] = found
            self.blocks.append(found)
        return found

    def add_note(self, text: str) -> None:
        """Append a plain Markdown paragraph (e.g. "Interrupted.")."""
        self.blocks.append(_Block("note", text=text))

    def feed(self, event: Event, now: float = 0.0) -> bool:
        """Update the state; True if the rendering changed."""
        if isinstance(event, TextDelta):
            self._block("text", event.message_id).text += event.delta
        elif isinstance(event, TextDone):
            block = self._index.get(("text", event.message_id))
            if block is not None or event.text:
                self._block("text", event.message_id).text = event.text
        elif isinstance(event, Reasoning):
            self._block("reasoning", event.message_id).text += event.delta
        elif isinstance(event, ToolCall):
            block = self._block("tool", event.id)
            block.tool = {"name": event.name, "args": short_args(event.input), "state": "running"}
        elif isinstance(event, ToolProgress):
            block = self._block("tool", event.call_id)
            block.text = (block.text + event.text)[-PROGRESS_CHARS:]
        elif isinstance(event, ToolResult):
            block = self._block("tool", event.call_id)
            block.tool.setdefault("name", event.name)
            block.tool.setdefault("args", "")
            first = event.output.strip().splitlines()[0] if event.output.strip() else ""
            block.tool.update(
                state="ok" if event.ok else "error",
                ms=event.duration_ms,
                summary=event.summary or first,
                error="" if event.ok else first,
                full_size=event.full_size,
                call_id=event.call_id,
            )
            block.text = ""
        elif isinstance(event, Chat):
            self.final_text = event.content
            if event.content and ("text", event.message_id) not in self._index:
                self._block("text", event.message_id).text = event.content
        elif isinstance(event, ErrorEvent):
            self.error = event
            self.blocks.append(_Block("error", event.code, event.message))
        elif isinstance(event, StatusEvent):
            self.status, self.detail = event.status, event.detail
            self.done = event.status == "idle"
            match = _RETRY_IN.search(event.detail) if event.status == "waiting" else None
            self.wait_until = now + float(match.group(1)) if match else None
        else:
            return False
        return True

    def status_line(self, now: float = 0.0) -> str:
        """The live status line, or "" when idle."""
        if self.done or self.status == "idle":
            return ""
        detail = self.detail
        if self.status == "waiting" and self.wait_until is not None:
            left = max(0.0, self.wait_until - now)
            detail = _RETRY_IN.sub(f"in {left:.0f} s", detail)
        # No emoji: some systems have no font for them.
        tail = f": {detail}" if detail else ""
        return f"*{self.status}{_escape_emphasis(tail)}…*"

    def render(self, final: bool = False, now: float = 0.0, start: int = 0) -> str:
        """Markdown of blocks[start:], with the status line unless ``final``."""
        parts = [p for p in (_render_block(b, final) for b in self.blocks[start:]) if p]
        if not final:
            line = self.status_line(now)
            if line:
                parts.append(line)
        return "\n\n".join(parts).strip() + ("\n" if parts else "")


def _escape_emphasis(text: str) -> str:
    return text.replace("*", r"\*").replace("_", r"\_")


def _render_block(block: _Block, final: bool) -> str:
    if block.kind == "text":
        return block.text.strip()
    if block.kind == "note":
        return block.text
    if block.kind == "reasoning":
        body = block.text.strip()
        if not body:
            return ""
        return f"<details><summary>Reasoning</summary>\n\n{body}\n\n</details>"
    if block.kind == "error":
        if block.key == "not_configured":
            return block.text  # exactly HOW_TO_CONFIGURE, already Markdown
        return f"**Error:** {block.text}"
    if block.kind == "tool":
        return _render_tool(block, final)
    return ""


def _render_tool(block: _Block, final: bool) -> str:
    tool = block.tool
    name = tool.get("name", "?")
    args = tool.get("args", "")
    # U+25B8, a geometric shape every text font has (the wrench emoji was missing on some).
    head = f"> ▸ **{name}**" + (f" {code_span(args)}" if args else "")
    state = tool.get("state", "running")
    if state == "running":
        line = f"{head} · running…"
        if block.text and not final:
            tail = "\n".join(block.text.rstrip("\n").splitlines()[-PROGRESS_LINES:])
            fence = "````" if "```" in tail else "```"
            quoted = "\n".join(f"> {x}" for x in f"{fence}\n{tail}\n{fence}".splitlines())
            line = f"{line}\n>\n{quoted}"
        return line
    mark = "✓" if state == "ok" else "✗ error"
    text = tool.get("summary") if state == "ok" else tool.get("error") or tool.get("summary")
    summary = _escape_emphasis(_clip(str(text or ""), SUMMARY_CHARS))
    ms = _duration(float(tool.get("ms", 0.0)))
    line = f"{head} · {mark} · {ms}" + (f" · {summary}" if summary else "")
    if tool.get("full_size"):
        # The model saw a summary; the whole output is stored.
        command = code_span(f"%think_output {tool.get('call_id', '')}")
        line += f"\n>\n> whole output ({int(tool['full_size']):,} characters): {command}"
    return line
