"""What the model sees during a run, kept in step with the stored history.

    ctx = ModelContext.from_rows(system, rows, loaded, tools_tokens)
    ctx.tokens()                     # estimate of the next request (system, history, tools)
    ctx.append([assistant_row])      # O(new rows): a step's cost does not grow with history
    ctx.compacted(summary_row, plan) # pinned request + one summary + the verbatim tail

Stored rows are never changed: a compaction adds a ``summary`` row whose ``compaction`` field
says which rows it covers (``to_seq``); rebuilding the context from the store gives the same
messages as the run had. The summary is part of the system message, so role alternation of the
conversation is untouched. Messages too large for the room (a giant pasted request, one
enormous tool result in the tail) are cut in the middle for the model only (:meth:`fit`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..store.history import Frozen, Row, StartMemo, read_only_until
from .compaction import Plan
from .messages import to_model_message, transform_context, transform_steps
from .tokens import estimate_message, estimate_text

SUMMARY_HEADING = (
    "# Earlier in this session (compacted)\n"
    "Older messages were summarised to fit the context window. The first request of the "
    "session follows verbatim, then the most recent messages.\n\n"
)


def split_history(
    rows: Sequence[dict[str, Any]],
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, list[dict[str, Any]]]:
    """(pinned first request, latest summary, rows after it) of a stored history.

    Without a summary nothing is pinned and every row is visible.
    """
    summaries = [r for r in rows if r.get("role") == "summary" and r.get("compaction")]
    if not summaries:
        return None, None, [r for r in rows if r.get("role") != "summary"]
    latest = max(summaries, key=lambda r: int(r["compaction"].get("to_seq") or 0))
    to_seq = int(latest["compaction"].get("to_seq") or 0)
    first = next((r for r in rows if r.get("role") == "user"), None)
    visible = [
        r
        for r in rows
        if r.get("role") != "summary" and r is not first and int(r.get("seq") or 0) > to_seq
    ]
    return first, latest, visible


@dataclass
class ModelContext:
    """The model messages of a run and their token estimates, row for row."""

    base_system: str
    tools_tokens: int = 0
    pinned: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    loaded: dict[str, str] = field(default_factory=dict)
    _pinned_size: int = 0
    _system_size: int = 0
    _total: int = 0
    _images: bool = False

    @classmethod
    def from_rows(
        cls,
        system: str,
        rows: Sequence[dict[str, Any]],
        loaded: dict[str, str] | None = None,
        tools_tokens: int = 0,
    ) -> ModelContext:
        """Build the context of a stored history (see :func:`split_history`).

        A request's history is the previous request's plus what came since: the start that
        is the same row objects as last time (the history cache's read-only rows) is not
        transformed and converted again (see :class:`_Prefix`)."""
        ctx = cls(system, tools_tokens, loaded=dict(loaded or {}))
        n, pre = _PREFIXES.get(rows)
        tail = rows[n:]
        if any(r.get("role") == "summary" for r in tail):
            # Compacted: the whole history, every time.
            _PREFIXES.drop(rows)
            ctx.pinned, ctx.summary, visible = split_history(rows)
            ctx._rebuild(transform_context(visible))
            return ctx
        # Only read-only rows can be remembered: a request's own new rows are plain dicts.
        out, clean_in, clean_out = transform_steps(tail, read_only_until(tail))
        ctx._rebuild([])
        if pre is not None:
            ctx._extend(pre)
        ctx.append(out[:clean_out])
        _PREFIXES.put(rows, n + clean_in, ctx._prefix(pre))
        ctx.append(out[clean_out:])
        return ctx

    # -- reading -----------------------------------------------------------------------------

    def tokens(self) -> int:
        """Estimated tokens of the next request (uncalibrated)."""
        return self._total + self.tools_tokens + 3

    @property
    def has_images(self) -> bool:
        """Whether the next request carries image parts (then the vision role answers)."""
        return self._images

    @property
    def history_tokens(self) -> int:
        """Tokens of the rows after the pinned request and the summary."""
        return sum(self.sizes)

    @property
    def fixed_tokens(self) -> int:
        """Tokens that compaction cannot remove: system prompt (without summary), tools."""
        return estimate_text(self.base_system) + 4 + self.tools_tokens + 3

    # -- changing ----------------------------------------------------------------------------

    def append(self, rows: Iterable[dict[str, Any]]) -> None:
        """Add rows produced by the run (an assistant turn, tool results)."""
        # The whole history goes through here at every request: locals, one lookup a row.
        loaded, kept = self.loaded, _CONVERTED
        total, images = self._total, self._images
        add_row, add_size, add_msg = self.rows.append, self.sizes.append, self.messages.append
        for row in rows:
            hit = kept.get(id(row))
            if hit is not None and hit[0] is row:
                _, msg, size, image = hit
            else:
                msg, size, image = _converted(row, loaded)
            if msg is None:
                continue
            add_row(row)
            add_size(size)
            add_msg(msg)
            total += size
            images = images or image
        self._total, self._images = total, images

    def compacted(self, summary: dict[str, Any], plan: Plan) -> None:
        """Replace the span by ``summary`` (a stored ``summary`` row)."""
        self.summary = summary
        self.pinned = plan.pinned
        self._rebuild(list(plan.tail))

    def fit(self, limit: int) -> int:
        """Cut the largest messages in the middle until the estimate is under ``limit``
        (model view only); returns how many were cut. Stops when nothing can shrink further
        (a window too small for the prompt and tools must not loop forever)."""
        cut = 0
        done: set[int] = set()  # messages that cannot get any smaller
        while self.tokens() > limit:
            sizes = [
                (size, i)
                for i, size in enumerate(self._message_sizes())
                if i > 0 and i not in done and isinstance(self.messages[i].get("content"), str)
            ]
            if not sizes:
                return cut
            size, i = max(sizes)
            over = self.tokens() - limit
            keep = max(200, size - over - 50)
            if keep >= size:
                done.add(i)
                continue
            msg = self.messages[i]
            text = str(msg["content"])
            chars = max(400, int(len(text) * keep / max(size, 1)))
            head, tail = text[: chars * 2 // 3], text[-(chars // 3) :]
            shorter = f"{head}\n\n[... cut to fit the context window ...]\n\n{tail}"
            if len(shorter) >= len(text):
                done.add(i)
                continue
            self._set_message(i, {**msg, "content": shorter})
            cut += 1
        return cut

    # -- internals ---------------------------------------------------------------------------

    def system_text(self) -> str:
        """The system message: the prompt, plus the summary once the session was compacted."""
        if self.summary is None:
            return self.base_system
        return f"{self.base_system}\n\n{SUMMARY_HEADING}{self.summary.get('content') or ''}\n"

    def _rebuild(self, rows: list[dict[str, Any]]) -> None:
        system = {"role": "system", "content": self.system_text()}
        self.messages = [system]
        self._system_size = estimate_message(system)
        self._pinned_size, self._images = 0, False
        if self.pinned is not None:
            msg, self._pinned_size, self._images = _converted(self.pinned, self.loaded)
            self.messages.append(msg or {"role": "user", "content": ""})
        self.rows, self.sizes = [], []
        self._total = self._system_size + self._pinned_size
        self.append(rows)

    def _extend(self, pre: _Prefix) -> None:
        """Start with a remembered prefix (rows with attachments converted for this request:
        an image is sent only with the request that attached it)."""
        self.rows.extend(pre.out)
        self.messages.extend(pre.messages)
        self.sizes.extend(pre.sizes)
        self._total += pre.total
        self._images = self._images or pre.images
        for i in pre.attached:
            msg, size, image = _converted(self.rows[i], self.loaded)
            self.messages[1 + i] = msg or {"role": "user", "content": ""}
            self.sizes[i] = size
            self._total += size
            self._images = self._images or image

    def _prefix(self, pre: _Prefix | None) -> _Prefix:
        """What this context holds now, as a prefix (no system message)."""
        start = len(pre.out) if pre is not None else 0
        attached = list(pre.attached) if pre is not None else []
        attached += [i for i in range(start, len(self.rows)) if self.rows[i].get("attachments")]
        skip = set(attached)
        images = (pre.images if pre is not None else False) or any(
            _has_image(self.messages[1 + i]) for i in range(start, len(self.rows)) if i not in skip
        )
        return _Prefix(
            list(self.rows),
            self.messages[1:],
            list(self.sizes),
            self._total - self._system_size - sum(self.sizes[i] for i in attached),
            images,
            attached,
        )

    def _message_sizes(self) -> list[int]:
        head = [self._pinned_size] if self.pinned is not None else []
        return [self._system_size, *head, *self.sizes]

    def _set_message(self, index: int, msg: dict[str, Any]) -> None:
        size = estimate_message(msg)
        self.messages[index] = msg
        if index == 1 and self.pinned is not None:
            self._total += size - self._pinned_size
            self._pinned_size = size
            return
        j = index - 1 - (1 if self.pinned is not None else 0)
        self._total += size - self.sizes[j]
        self.sizes[j] = size


@dataclass
class _Prefix:
    """The start of a conversation as the last request converted it, for the next one.

    Its input rows (kept by the :class:`StartMemo`) are read-only :class:`Row` objects with
    no compaction summary; after them no tool call waits for its result, so the transform of
    later rows does not depend on them. ``out`` is their transform; ``messages`` and
    ``sizes`` follow it row for row. Rows with attachments (``attached``: positions in
    ``out``) are converted again by every request; ``total`` and ``images`` leave them out."""

    out: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    sizes: list[int]
    total: int
    images: bool
    attached: list[int]


#: The last prefix of each recent conversation (a kernel's session and its subagents').
_PREFIXES: StartMemo[_Prefix] = StartMemo()


#: What stored rows converted to, by the row object: (the row, its message, the message's
#: token estimate, whether it carries an image). Every request converts the whole history;
#: rows the history cache hands out (store/history.py) are the same read-only objects from one
#: request to the next while they are unchanged, so each is converted once. The entry keeps its
#: row alive: an id is not reused while the entry stands.
_CONVERTED: dict[int, tuple[Row, dict[str, Any] | None, int, bool]] = {}
_CONVERTED_MAX = 20_000


def _converted(
    row: dict[str, Any], loaded: dict[str, str]
) -> tuple[dict[str, Any] | None, int, bool]:
    """A row as a model message (None if the model does not see it), its tokens, and whether
    it carries an image."""
    # A row with attachments converts to what ``loaded`` holds for this request.
    keep = type(row) is Row and not row.get("attachments")
    if keep:
        hit = _CONVERTED.get(id(row))
        if hit is not None and hit[0] is row:
            return hit[1], hit[2], hit[3]
    msg = to_model_message(row, loaded)
    size = estimate_message(msg) if msg is not None else 0
    image = msg is not None and _has_image(msg)
    if keep:
        # Read-only too: the transport keeps its JSON encoding by identity (model.py).
        msg = Frozen(msg) if msg is not None else None
        if len(_CONVERTED) >= _CONVERTED_MAX:
            _CONVERTED.clear()
        _CONVERTED[id(row)] = (row, msg, size, image)  # type: ignore[assignment]
    return msg, size, image


def _has_image(msg: dict[str, Any]) -> bool:
    content = msg.get("content")
    return isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") == "image_url" for p in content
    )
