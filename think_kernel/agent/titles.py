"""Session titles by the ``fast`` role: a few words naming what the first request is about.

    title = await make_title(caller, "plot the distribution of price in sales.csv")

Called once per untitled session, after its first run; a failure leaves the session untitled.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from .calls import ModelCaller
from .model import ModelError


class Sessions(Protocol):
    """The session rows a title is read from and written to."""

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        """One session, or None."""
        ...

    async def update_session(self, session_id: str, **fields: Any) -> None:
        """Change fields of a session."""
        ...


TITLE_PROMPT = """\
Name this working session in at most six words, from the user's first request. Answer with \
the title only: no quotes, no final period."""
MAX_TITLE = 80


def clean_title(text: str) -> str:
    """The first line of a model's answer, without quotes or a final period, bounded."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    line = lines[0] if lines else ""
    line = line.strip().strip("\"'`*#").strip().rstrip(".")
    if line.lower().startswith("title:"):
        line = line[6:].strip()
    return line[:MAX_TITLE]


async def make_title(caller: ModelCaller, request: str, message_id: str = "") -> str:
    """A short title for a session from its first request ("" if the model fails)."""
    messages = [
        {"role": "system", "content": TITLE_PROMPT},
        {"role": "user", "content": request[:4000]},
    ]
    try:
        text, _usage = await caller.complete(
            messages, role="fast", purpose="title", message_id=message_id, retries=0
        )
    except ModelError:
        return ""
    return clean_title(text)


class Titler:
    """Names untitled sessions in the background; owns those tasks (cancelled on close).

    ``titler.later(store, session_id, caller, request)`` after a run that answered.
    """

    def __init__(self) -> None:
        self.tasks: set[asyncio.Future[None]] = set()
        self._titled: set[str] = set()  # sessions seen with a title

    def later(self, store: Sessions, session_id: str, caller: ModelCaller, request: str) -> None:
        """Name the session with the fast model unless it has a title. Even the check is
        made in the background: a run ends without waiting for one more read."""
        if session_id in self._titled or not request.strip():
            return

        async def name() -> None:
            session = await store.get_session(session_id)
            if session is None or session.get("title"):
                if session is not None:
                    self._titled.add(session_id)  # a title stays: no read for it again
                return
            title = await make_title(caller, request)
            current = await store.get_session(session_id)
            if title and current is not None and not current.get("title"):
                await store.update_session(session_id, title=title)

        task = asyncio.ensure_future(name())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def close(self) -> None:
        """Cancel the titles under way (a title is a nicety: never wait on it)."""
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
