"""Model calls of one session: the model of each role, usage records, quick internal calls.

    caller = ModelCaller(client, store, session_id, {"primary": "gpt-4o", "fast": "gpt-4o-mini"})
    caller.model("summarizer")                        # -> "gpt-4o-mini" (falls back on fast)
    text, usage = await caller.complete(messages, role="fast", purpose="title")
    usage = await caller.record(role="primary", purpose="step", message_id=mid,
                                reported=chunk, estimated_in=812, text_out="...")

Roles: ``primary`` runs the main loop, ``fast`` subagents and quick internal calls
(titles, summaries of large tool outputs), ``summarizer`` compaction, ``vision`` requests with
images. The caller is given the names already resolved (session props > subclass > config >
default, see ``Runtime.model_name``); a role left empty falls back: summarizer -> fast ->
primary, vision -> primary.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from .catalog import cost_of, window_for
from .events import Usage
from .model import Chunk, ModelClient, ModelError
from .tokens import Calibration, estimate_messages, estimate_text

if TYPE_CHECKING:
    from .stores import RunLog

ROLES = ("primary", "fast", "summarizer", "vision")
FALLBACK = {"fast": "primary", "summarizer": "fast", "vision": "primary"}


def resolve_roles(names: Mapping[str, str]) -> dict[str, str]:
    """Fill empty roles from their fallbacks (``primary`` must be set)."""
    out: dict[str, str] = {}
    for role in ROLES:
        r = role
        while not names.get(r) and r in FALLBACK:
            r = FALLBACK[r]
        out[role] = str(names.get(r) or "")
    return out


class ModelCaller:
    """Picks the model of a role, records every call's usage and cost, calibrates estimates."""

    def __init__(
        self,
        client: ModelClient,
        store: RunLog,
        session_id: str,
        models: Mapping[str, str],
        *,
        prices: Mapping[str, Any] | None = None,
        calibration: Calibration | None = None,
        windows: Callable[[str], int] | None = None,
        learned: dict[str, int] | None = None,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
    ) -> None:
        self.client = client
        self.store = store
        self.session_id = session_id
        self.models = resolve_roles(models)
        self.prices = dict(prices or {})
        self.calibration = calibration or Calibration()
        self._windows = windows or (lambda model: window_for(model, {}))
        # Windows endpoints told us about in context-length errors (shared across runs).
        self.learned = learned if learned is not None else {}
        self.sleep = sleep

    def model(self, role: str) -> str:
        """The model name of a role."""
        return self.models.get(role) or self.models["primary"]

    def window(self, role: str) -> int:
        """The context window (tokens) of a role's model, as learned or configured."""
        model = self.model(role)
        learned = self.learned.get(model)
        configured = self._windows(model)
        return min(learned, configured) if learned else configured

    def learn_window(self, role: str, limit: int | None, tried: int) -> None:
        """A context-length error: remember the window the endpoint named, or else assume the
        request that failed (``tried`` tokens, estimated) was just over it."""
        model = self.model(role)
        guess = limit if limit and limit > 0 else int(tried * 0.9)
        if guess > 0:
            self.learned[model] = min(self.learned.get(model, guess), guess)

    async def record(
        self,
        *,
        role: str,
        purpose: str,
        message_id: str,
        reported: Chunk | None,
        estimated_in: int,
        text_out: str,
    ) -> Usage:
        """Store one call's usage (reported, else estimated) and return its event."""
        model = self.model(role)
        if reported is not None and reported.tokens_in > 0:
            self.calibration.observe(model, estimated_in, reported.tokens_in)
            tin, tout = reported.tokens_in, reported.tokens_out
            cached, reasoning, estimated = reported.tokens_cached, reported.tokens_reasoning, False
        else:
            tin = self.calibration.scale(model, estimated_in)
            tout, cached, reasoning, estimated = estimate_text(text_out), 0, 0, True
        cost = cost_of(model, tin, tout, cached, self.prices)
        await self.store.add_usage(
            self.session_id,
            role=role,
            model=model,
            purpose=purpose,
            message_id=message_id or None,
            tokens_in=tin,
            tokens_out=tout,
            tokens_cached=cached,
            tokens_reasoning=reasoning,
            cost=cost,
            estimated=estimated,
        )
        return Usage(
            message_id, role, model, purpose, tin, tout, cached, reasoning, cost, estimated
        )

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        role: str,
        purpose: str,
        message_id: str = "",
        retries: int = 1,
    ) -> tuple[str, Usage]:
        """One quick call without tools; returns its text and usage. Raises ModelError."""
        attempt = 0
        while True:
            text, usage = "", None
            try:
                async for chunk in self.client.stream(
                    messages, [], self.model(role), purpose=purpose
                ):
                    if chunk.kind == "text":
                        text += chunk.text
                    elif chunk.kind == "usage":
                        usage = chunk
                break
            except ModelError as e:
                if not e.transient or attempt >= retries:
                    raise
                attempt += 1
                if self.sleep is not None:
                    await self.sleep(1.0)
        event = await self.record(
            role=role,
            purpose=purpose,
            message_id=message_id,
            reported=usage,
            estimated_in=estimate_messages(messages),
            text_out=text,
        )
        return text.strip(), event
