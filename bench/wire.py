"""What the one wire declaration costs on the hot path: serialising and decoding frames.

    python bench/wire.py

Prints the best of 20 rounds for: 10,000 events (text deltas, statuses, usage, tool results)
built and serialised with ``to_dict()``; the same events serialised the way ``to_dict()``
did before the field names were cached (``dataclasses.fields()`` per call), as the
baseline of the same run; and 1,000 kernel-link ``items`` frames of 20 items decoded
against the server's table (``think_kernel.wire.base.decode``).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from think_kernel.agent.events import StatusEvent, TextDelta, ToolResult, Usage  # noqa: E402
from think_kernel.wire.base import decode  # noqa: E402
from think_kernel.wire.link import TO_SERVER  # noqa: E402

N = 10_000


def _events() -> list[Any]:
    out: list[Any] = []
    for i in range(N):
        kind = i % 4
        if kind == 0:
            out.append(TextDelta(message_id="m1", delta="hello "))
        elif kind == 1:
            out.append(StatusEvent(status="thinking"))
        elif kind == 2:
            out.append(Usage(message_id="m1", role="main", model="m", tokens_in=3))
        else:
            out.append(ToolResult(call_id="c", name="bash", output="ok", duration_ms=1, ok=True))
    return out


def _fields_each_time(event: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": event.type}
    for f in dataclasses.fields(event):
        out[f.name] = getattr(event, f.name)
    return out


def best(fn: Callable[[], None], rounds: int = 20) -> float:
    """The fastest of ``rounds`` runs of ``fn``, in ms."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def main() -> None:
    """Print the figures."""
    events = _events()
    now = best(lambda: [e.to_dict() for e in events])
    before = best(lambda: [_fields_each_time(e) for e in events])
    build = best(lambda: [TextDelta(message_id="m1", delta="x").to_dict() for _ in range(N)])
    item = {"n": 1, "kind": "event", "session_id": "s", "run_id": "r", "event": {}}
    frame = {"type": "items", "items": [dict(item, n=i) for i in range(20)]}
    dec = best(lambda: [decode(frame, TO_SERVER) for _ in range(1000)])
    print(f"{N:,} events to_dict():               {now:7.2f} ms")
    print(f"{N:,} events, fields() each call:     {before:7.2f} ms  (ratio {before / now:.1f}x)")
    print(f"{N:,} TextDelta built + to_dict():    {build:7.2f} ms")
    print(f"1,000 items frames (20 items) decoded: {dec:7.2f} ms")


if __name__ == "__main__":
    main()
