"""Inline completion: ``POST /api/think/complete``, ghost text for notebook cells and files.

    completer = Completer(timeout=4.0, max_tokens=96)
    request = CompletionRequest(prefix="df.gro", cells=["import pandas as pd"])
    job = completer.start(request, "alice:analysis.ipynb", store)  # supersedes the key's last
    answer = await job                                             # Completion(text="upby(")

The lab extension's inline completion provider sends the text around the cursor of the cell
or file (bounded) and the notebook's previous cells (bounded, nearest first); the server adds
the variable names of the notebook's kernel when it has them cheaply (:mod:`.kernelnames`).
It asks the ``fast`` role of the endpoint in force (the setup card's, else the environment's)
through the agent's own model client, with a small ``max_tokens`` and a short deadline.
Without a configured endpoint it answers at once with an empty completion and
``configured: false``, and sends nothing anywhere.

One request in flight per browser tab and document: a newer one cancels the older upstream
request (its connection to the model is closed), and so does the browser going away (the
provider aborts its fetch when the person types on).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import time
from collections.abc import AsyncGenerator, Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.endpoint import SETTING, Endpoint, resolve

from .base import ThinkHandler
from .base import field as body_field
from .modelsetup import kernel_config

if TYPE_CHECKING:
    from think_kernel.agent.model import Chunk, OpenAIModel
    from think_kernel.store import Store

    from .kernelnames import KernelNames

#: What of the document reaches the model: the end of the text before the cursor, the start
#: of the text after it, and the previous cells up to a total, nearest first.
PREFIX_CHARS = 4_000
SUFFIX_CHARS = 1_000
CELL_CHARS = 2_000
CELLS_CHARS = 6_000
MAX_CELLS = 200
MAX_VARIABLES = 100
#: The most of an answer shown as ghost text.
MAX_LINES = 20

SYSTEM = (
    "You are a code completion engine inside JupyterLab. Continue the text at <CURSOR>. "
    "Answer with only the text to insert there: no explanation, no Markdown fences, and do "
    "not repeat the text before the cursor. Answer with nothing if no completion is useful."
)
_FENCE = re.compile(r"^```[\w+-]*\n?|\n?```\s*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,63}$")


@dataclass(frozen=True)
class CompletionRequest:
    """What the provider sends: the text around the cursor and the notebook's context."""

    prefix: str
    suffix: str = ""
    path: str = ""
    language: str = ""
    cells: list[str] = field(default_factory=list)
    variables: list[str] = field(default_factory=list)
    client: str = ""  # the browser tab asking: its newer request supersedes its older


@dataclass(frozen=True)
class Completion:
    """The answer: text to insert (maybe empty) and why it is empty when it is."""

    text: str = ""
    configured: bool = True
    model: str = ""
    model_ms: float = 0.0  # time spent waiting on the model, so callers can subtract it
    reason: str = ""  # "", "no_model", "timeout", "superseded", "error"
    error: str = ""

    def as_json(self) -> dict[str, Any]:
        """The route's answer."""
        return {
            "completion": self.text,
            "configured": self.configured,
            "model": self.model,
            "model_ms": round(self.model_ms, 3),
            "reason": self.reason,
            "error": self.error,
        }


def parse_request(body: dict[str, Any]) -> CompletionRequest:
    """A CompletionRequest from a JSON body (400 for a missing or mistyped field)."""
    prefix = body_field(body, "prefix", str, required=True)
    suffix = body_field(body, "suffix", str) or ""
    path = body_field(body, "path", str) or ""
    language = body_field(body, "language", str) or ""
    client = body_field(body, "client", str) or ""
    if len(path) > 1_000 or len(language) > 100 or len(client) > 100:
        raise web.HTTPError(400, "'path', 'language' or 'client' is too long")
    cells = body_field(body, "cells", list) or []
    variables = body_field(body, "variables", list) or []
    if not all(isinstance(c, str) for c in cells):
        raise web.HTTPError(400, "'cells' must be a list of strings")
    if not all(isinstance(v, str) for v in variables):
        raise web.HTTPError(400, "'variables' must be a list of strings")
    return CompletionRequest(
        prefix=prefix,
        suffix=suffix,
        path=path,
        language=language,
        cells=cells[-MAX_CELLS:],
        variables=[v for v in variables[:MAX_VARIABLES] if _NAME.match(v)],
        client=client,
    )


def build_messages(req: CompletionRequest) -> list[dict[str, str]]:
    """The bounded prompt: previous cells (nearest kept first), variables, then the current
    cell or file with ``<CURSOR>`` where the person types."""
    parts: list[str] = []
    kept: list[str] = []
    budget = CELLS_CHARS
    for cell in reversed(req.cells):
        text = cell[-CELL_CHARS:]
        if not text.strip():
            continue
        if len(text) > budget:
            break
        budget -= len(text)
        kept.append(text)
    if kept:
        cells = "\n\n".join(f"# In[{i + 1}]:\n{c}" for i, c in enumerate(reversed(kept)))
        parts.append(f"Previous cells of the notebook:\n{cells}")
    if req.variables:
        parts.append("Variables defined in the kernel: " + ", ".join(req.variables))
    if req.path.endswith(".ipynb") or req.cells:
        what = f"The current cell of {req.path}" if req.path else "The current cell"
    else:
        what = f"The file {req.path}" if req.path else "The text"
    lang = f" ({req.language})" if req.language else ""
    text = req.prefix[-PREFIX_CHARS:] + "<CURSOR>" + req.suffix[:SUFFIX_CHARS]
    parts.append(f"{what}{lang}:\n{text}")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def clean(answer: str, prefix: str) -> str:
    """The model's answer as ghost text: no fences, no echo of the current line, bounded."""
    text = _FENCE.sub("", answer.strip("\n")) if answer.lstrip().startswith("```") else answer
    line = prefix.rsplit("\n", 1)[-1]
    if line.strip() and text.startswith(line):
        text = text[len(line) :]  # models often repeat the line they were given
    return "\n".join(text.split("\n")[:MAX_LINES]).rstrip()


class Completer:
    """Asks the ``fast`` model; one request in flight per key (tab and document)."""

    def __init__(
        self, *, timeout: float, max_tokens: int, names: KernelNames | None = None
    ) -> None:
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.names = names
        self._client: OpenAIModel | None = None
        self._client_key: tuple[str, str | None] | None = None
        self._inflight: dict[str, asyncio.Task[Completion]] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def start(self, req: CompletionRequest, key: str, store: Store) -> asyncio.Task[Completion]:
        """Start a completion; the key's request still in flight is cancelled."""
        older = self._inflight.pop(key, None)
        if older is not None:
            older.cancel()
        task = asyncio.ensure_future(self.complete(req, store))
        self._inflight[key] = task
        task.add_done_callback(lambda t: self._forget(key, t))
        return task

    def _forget(self, key: str, task: asyncio.Task[Completion]) -> None:
        if self._inflight.get(key) is task:
            del self._inflight[key]

    async def complete(self, req: CompletionRequest, store: Store) -> Completion:
        """The completion of one request (an empty one, with the reason, when there is none)."""
        from think_kernel.agent.errors import ModelError  # here: the server's start skips httpx

        config = kernel_config()
        ep = resolve(config, await store.get_setting(SETTING))
        if not ep.configured:
            return Completion(configured=False, reason="no_model")
        model = config.model_for("fast") or ep.model
        if self.names is not None and req.path:
            known = await self.names.of(req.path)
            merged = list(dict.fromkeys([*req.variables, *known]))[:MAX_VARIABLES]
            req = dataclasses.replace(req, variables=merged)
        client = self._client_for(ep)
        options = {"max_tokens": self.max_tokens, "temperature": 0}
        pieces: list[str] = []
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self.timeout):
                # Closed at once when cancelled, so the model's connection closes with it.
                stream = cast(
                    "AsyncGenerator[Chunk, None]",
                    client.stream(build_messages(req), [], model, purpose="complete",
                                  options=options),
                )  # fmt: skip
                async with contextlib.aclosing(stream) as chunks:
                    async for chunk in chunks:
                        if chunk.kind == "text":
                            pieces.append(chunk.text)
        except TimeoutError:
            took = (time.perf_counter() - started) * 1000
            return Completion(model=model, model_ms=took, reason="timeout")
        except ModelError as e:
            took = (time.perf_counter() - started) * 1000
            return Completion(model=model, model_ms=took, reason="error", error=str(e)[:300])
        took = (time.perf_counter() - started) * 1000
        return Completion(clean("".join(pieces), req.prefix), model=model, model_ms=took)

    def _client_for(self, ep: Endpoint) -> OpenAIModel:
        from think_kernel.agent.model import OpenAIModel

        # Local servers accept any key; send one anyway (some proxies insist).
        wanted = (ep.api_key or "not-needed", ep.base_url)
        if self._client is None or self._client_key != wanted:
            if self._client is not None:  # the old endpoint's pool, closed in passing
                task = asyncio.ensure_future(self._client.aclose())
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)
            self._client = OpenAIModel(wanted[0], wanted[1], timeout=self.timeout)
            self._client_key = wanted
        return self._client

    async def aclose(self) -> None:
        """Cancel what is in flight and close the connection pool."""
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, *self._closing, return_exceptions=True)
        if self.names is not None:
            await self.names.aclose()
        if self._client is not None:
            await self._client.aclose()
            self._client = None


class CompleteHandler(ThinkHandler):
    """``POST {"prefix", "suffix"?, "path"?, "language"?, "cells"?, "variables"?}``:
    ``{"completion", "configured", "model", "model_ms", "reason", "error"}``."""

    def initialize(self, name: str, startup: Any, completer: Completer) -> None:  # type: ignore[override]
        """Receive the start handle and the extension's completer."""
        super().initialize(name, startup)
        self.completer = completer
        self._job: asyncio.Task[Completion] | None = None
        self._gone = False

    @authorized
    async def post(self) -> None:
        """Complete at the cursor; a superseded request answers an empty completion."""
        req = parse_request(self.body())
        # One request in flight per tab and document; a tab that names no id is keyed by
        # its user (with token auth every request may be a new anonymous user).
        who = req.client or (self.current_user.username if self.current_user else "")
        self._job = self.completer.start(req, f"{who}\0{req.path}", self.svc.store)
        answer = await _unless_cancelled(self._job)
        if answer is None:
            answer = Completion(reason="superseded")
        if not self._gone:
            self.send(answer.as_json())

    def on_connection_close(self) -> None:
        """The browser gave up (the person typed on): close the model request too."""
        self._gone = True
        if self._job is not None:
            self._job.cancel()


async def _unless_cancelled(job: Awaitable[Completion]) -> Completion | None:
    """The job's result, or None when the job (not this caller) was cancelled."""
    try:
        return await job
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # the caller itself is being cancelled: never swallow that
        return None


def completion_routes(base: str = "/api/think") -> list[tuple[str, type[ThinkHandler]]]:
    """URL pattern of the completion route."""
    return [(f"{base}/complete", CompleteHandler)]
