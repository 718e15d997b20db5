"""What a command answers, and the error for a user's mistake in one."""

from __future__ import annotations

from dataclasses import dataclass


class CommandError(Exception):
    """A user mistake in a command; the message says what to type instead."""


@dataclass
class CommandReply:
    """Markdown to show, and whether the current session changed."""

    markdown: str
    session_changed: bool = False
    value: str | None = None
