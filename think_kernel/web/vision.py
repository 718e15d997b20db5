"""Asking the ``vision`` model role about an image (a screenshot): one seam, two methods.

    vision = ModelVision(resolve)          # resolve(session_id) -> the session's ModelCaller
    answer = await vision.ask("Is the form filled in?", [Image("image/png", png)], session_id=sid)

The main loop's model may not see images at all (many local models cannot); the screenshot
tool sends the picture and the question to the vision role and hands the main model the
answer as text. The call goes through the session's :class:`ModelCaller`, so its tokens and
cost are recorded like every other model call (purpose ``vision``). :func:`image_part` builds
the OpenAI content part, so the loop can attach images the same way when it routes a call to
the vision role itself.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..agent.calls import ModelCaller

VISION_SYSTEM = (
    "You look at screenshots of web pages for a coding agent. Answer its question about the "
    "image precisely and briefly; quote visible text exactly; say so when something cannot "
    "be seen."
)


@dataclass(frozen=True)
class Image:
    """Image bytes and their MIME type."""

    mime: str
    data: bytes


def image_part(image: Image) -> dict[str, Any]:
    """The OpenAI chat content part for an image (a data URL)."""
    b64 = base64.b64encode(image.data).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{image.mime};base64,{b64}"}}


class VisionAsker(Protocol):
    """Answers a question about images."""

    @property
    def model_name(self) -> str:
        """The model that answers (for the tool result and the log)."""
        ...

    async def ask(
        self, question: str, images: Sequence[Image], *, session_id: str = "", message_id: str = ""
    ) -> str:
        """The answer text; raise on failure."""
        ...


Resolve = Callable[[str], Awaitable[ModelCaller]]


class ModelVision:
    """Asks through the session's model client, with the model of the ``vision`` role."""

    def __init__(self, resolve: Resolve) -> None:
        self._resolve = resolve
        self.model_name = ""

    async def ask(
        self, question: str, images: Sequence[Image], *, session_id: str = "", message_id: str = ""
    ) -> str:
        """One non-tool chat completion with the images as content parts; its usage is stored
        for ``session_id`` against ``message_id`` (the assistant message that asked)."""
        caller = await self._resolve(session_id)
        self.model_name = caller.model("vision")
        content: list[dict[str, Any]] = [{"type": "text", "text": question}]
        content += [image_part(i) for i in images]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": VISION_SYSTEM},
            {"role": "user", "content": content},
        ]
        text, _usage = await caller.complete(
            messages, role="vision", purpose="vision", message_id=message_id
        )
        return text
