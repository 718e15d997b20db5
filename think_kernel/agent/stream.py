"""From a chat-completions event stream to our :class:`Chunk` tuples.

    async with contextlib.aclosing(gathered(event_batches(response.aiter_bytes()))) as reads:
        async for events in reads:             # everything read since we last asked
            for chunk in merged(chunks(events)):
                ...

:func:`event_batches` decodes the server-sent events (:mod:`.sse`) into JSON objects, one
list per network read, up to ``data: [DONE]``; :func:`gathered` lets a reader task run ahead
of a busy consumer; :func:`chunks` and :func:`merged` turn completion-chunk objects into text,
reasoning, tool-call, finish and usage chunks, adjacent pieces joined.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

from .errors import ModelError
from .sse import SSEDecoder


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of a streamed model response."""

    kind: Literal["text", "reasoning", "tool_call", "finish", "usage"]
    text: str = ""
    index: int = 0
    call_id: str = ""
    name: str = ""
    arguments: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    tokens_reasoning: int = 0


async def event_batches(body: AsyncIterator[bytes]) -> AsyncGenerator[list[dict[str, Any]], None]:
    """The JSON objects of an event stream, one list per read from the network, up to
    ``data: [DONE]``. An event that carries an ``error`` (a mid-stream failure) raises a
    ModelError with its message.

    Everything one read brought is handed on at once: a burst of tokens costs the layers
    above one pass, not one per token. The exception is the stream's first chunk with
    content: it is handed on by itself, so the first token is not held back while the rest
    of its read is parsed."""
    decoder = SSEDecoder()
    waiting = True  # for the first chunk that says something
    async for raw in body:
        batch: list[dict[str, Any]] = []
        for event in decoder.feed(raw):
            if event.data.startswith("[DONE]"):
                if batch:
                    yield batch
                # Read to the end of the body: a response read whole goes back to the pool
                # (one closed early costs the next request a new connection).
                async for _ in body:
                    pass
                return
            try:
                obj = json.loads(event.data)
            except ValueError:
                continue  # a keep-alive some proxies send as data
            if not isinstance(obj, dict):
                continue
            if event.event == "error" or obj.get("error"):
                if batch:
                    yield batch
                err = obj.get("error", obj)
                message = err.get("message") if isinstance(err, dict) else err
                raise ModelError(f"the model endpoint reported an error: {message}", False)
            batch.append(obj)
            if waiting and _says_something(obj):
                # The first token goes up alone, before the rest of this read is parsed (an
                # instant model's whole answer can arrive in one read).
                waiting = False
                yield batch
                batch = []
        if batch:
            yield batch


def _says_something(obj: dict[str, Any]) -> bool:
    """True for a stream chunk with text, reasoning or a tool call in it."""
    return any(c.kind in ("text", "reasoning", "tool_call") for c in chunks([obj]))


_END = object()
HANDOVER = 0.002  # s: the longest a reader keeps what it read while more keeps arriving


async def gathered(
    batches: AsyncGenerator[list[dict[str, Any]], None],
) -> AsyncGenerator[list[dict[str, Any]], None]:
    """Everything read since the consumer last asked, as one list.

    A reader task reads; the consumer takes all it found each time it comes back. Each
    network read brings what one TCP segment held, often one token, and a read that finds
    data waiting does not suspend: read and consumed in turn, a fast stream cost the whole
    stack above (loop, runtime, link) once per token and kept the event loop to itself. Now
    the consumer's work is per batch, batches grow when the consumer falls behind, and it
    suspends (letting the link's writer and others run) whenever it has caught up.
    """
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def read() -> None:
        loop = asyncio.get_running_loop()
        handed = -1.0
        try:
            async for batch in batches:
                queue.put_nowait(batch)
                # Data that keeps arriving would keep the reader going: hand over the first
                # read at once (the first token is never held back), later ones at least
                # every HANDOVER seconds.
                if loop.time() - handed >= HANDOVER:
                    handed = loop.time()
                    await asyncio.sleep(0)
            queue.put_nowait(_END)
        except Exception as e:  # handed to the consumer, after what came before it
            queue.put_nowait(e)
        finally:
            await batches.aclose()

    reader = asyncio.ensure_future(read())
    try:
        while True:
            item = await queue.get()
            out: list[dict[str, Any]] = []
            while True:
                if item is _END or isinstance(item, Exception):
                    if out:
                        yield out
                    if isinstance(item, Exception):
                        raise item
                    return
                out.extend(item)
                if queue.empty():
                    break
                item = queue.get_nowait()
            yield out
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)


def chunks(events: list[dict[str, Any]]) -> list[Chunk]:
    """Our chunks of a list of completion-chunk objects, in order."""
    out: list[Chunk] = []
    for event in events:
        usage = event.get("usage")
        if isinstance(usage, dict):
            out.append(_usage_chunk(usage))
        for choice in event.get("choices") or ():
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                out.extend(_delta_chunks(delta))
            if choice.get("finish_reason"):
                out.append(Chunk("finish", text=str(choice["finish_reason"])))
    return out


def merged(pieces: list[Chunk]) -> list[Chunk]:
    """Adjacent text (or reasoning) chunks joined, and adjacent argument pieces of the same
    tool call: the same stream in fewer, larger chunks."""
    out: list[Chunk] = []
    for chunk in pieces:
        last = out[-1] if out else None
        if last is not None and last.kind == chunk.kind:
            if chunk.kind in ("text", "reasoning"):
                out[-1] = Chunk(chunk.kind, text=last.text + chunk.text)
                continue
            if (
                chunk.kind == "tool_call"
                and chunk.index == last.index
                and not (chunk.call_id or chunk.name)
            ):
                args = last.arguments + chunk.arguments
                out[-1] = dataclasses.replace(last, arguments=args)
                continue
        out.append(chunk)
    return out


def _usage_chunk(usage: dict[str, Any]) -> Chunk:
    prompt = usage.get("prompt_tokens_details")
    completion = usage.get("completion_tokens_details")
    return Chunk(
        "usage",
        tokens_in=int(usage.get("prompt_tokens") or 0),
        tokens_out=int(usage.get("completion_tokens") or 0),
        tokens_cached=int(prompt.get("cached_tokens") or 0) if isinstance(prompt, dict) else 0,
        tokens_reasoning=int(completion.get("reasoning_tokens") or 0)
        if isinstance(completion, dict)
        else 0,
    )


def _delta_chunks(delta: dict[str, Any]) -> list[Chunk]:
    out: list[Chunk] = []
    # Reasoning comes under different names depending on the server (vLLM, DeepSeek,
    # Ollama, OpenRouter); take whichever is present.
    for key in ("reasoning_content", "reasoning"):
        value = delta.get(key)
        if isinstance(value, str) and value:
            out.append(Chunk("reasoning", text=value))
            break
    content = delta.get("content")
    if isinstance(content, str) and content:
        out.append(Chunk("text", text=content))
    for tc in delta.get("tool_calls") or ():
        if not isinstance(tc, dict):
            continue
        fn = tc.get("function")
        fn = fn if isinstance(fn, dict) else {}
        index = tc.get("index")
        out.append(
            Chunk(
                "tool_call",
                index=index if isinstance(index, int) else 0,
                call_id=str(tc.get("id") or ""),
                name=str(fn.get("name") or ""),
                arguments=str(fn.get("arguments") or ""),
            )
        )
    return out
