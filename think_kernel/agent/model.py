"""Model access: a one-method protocol and its OpenAI-compatible implementation.

    model = OpenAIModel(api_key="...", base_url="http://localhost:11434/v1")
    async for chunk in model.stream(messages, tools=specs, model="llama3.1"):
        ...

Chunks are small tuples of our own (:class:`Chunk`) so the loop never touches SDK types.
Errors are turned into :class:`ModelError` with ``transient`` set for what is worth retrying
(429, 5xx, connection reset, read timeout, a stream cut before it finished) and a message that
says what to fix for the rest (401, unknown model, bad request). A request over the model's
context window is ``code="context_length"`` (with the window when the endpoint names it): the
loop compacts and retries once.

Every request asks for the usage chunk (``stream_options.include_usage``); an endpoint that
rejects the option is asked again without it, once per client. ``purpose`` travels in the
``X-Think-Purpose`` header (``step``, ``compaction``, ``tool_summary``, ``title``), which
endpoints ignore and proxies can log.

The request is the ``openai`` SDK's ``chat.completions.create(stream=True)`` on the wire (same
URL, headers, body and server-sent events), sent without the SDK: importing it (its pydantic
types for every API) takes about a second, more than the whole budget of a first ``%%think``
(issue 17), and parsing each chunk into pydantic objects cost more than the chunk. The HTTP
client is our own small one (``transport.py``: h11 on asyncio), or ``httpx`` when a proxy
variable is set (``HTTPS_PROXY``, ``ALL_PROXY``, ...) or a client is passed in.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import re
import ssl
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .. import __version__
from ..store.history import Frozen
from .tokens import spec_key
from .transport import HTTPClient, TransportError, TransportTimeout

#: Where requests go when no base URL is given (as the SDK: ``OPENAI_BASE_URL``, else OpenAI).
DEFAULT_URL = "https://api.openai.com/v1"


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


class ModelError(Exception):
    """A failed model call; ``transient`` ones are retried with backoff. ``limit`` is the
    context window the endpoint named in a context-length error, if it did."""

    def __init__(
        self, message: str, transient: bool, code: str = "model_error", limit: int | None = None
    ) -> None:
        super().__init__(message)
        self.transient = transient
        self.code = code
        self.limit = limit


class ModelClient(Protocol):
    """Streams one chat completion. Raise ModelError on failure.

    async for chunk in client.stream(messages, tools, "gpt-4o-mini", purpose="step"):
        ...
    """

    def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        model: str,
        *,
        purpose: str = "step",
    ) -> AsyncIterator[Chunk]:
        """Yield chunks of one completion (a ``usage`` chunk when the endpoint reports it),
        ending with a ``finish`` chunk."""
        ...


# How endpoints say a request is over the window: OpenAI and vLLM ("maximum context length
# is 4096 tokens"), llama.cpp ("exceeds the available context size"), LiteLLM / Anthropic
# ("prompt is too long"), Ollama and others ("context window", "too many tokens"). Patterns,
# not compiled ones: only an error needs them, and compiling both cost every first %%think
# ~4 ms (``re`` compiles and caches them at the first error).
_CONTEXT_ERRORS = (
    r"(?i)context[_ ]length|context[_ ]window|maximum context|context size|prompt is too long"
    r"|too many tokens|reduce the length|input is too long|exceeds? the (?:model's )?(?:max|limit)"
)
_LIMIT = (
    r"(?i)(?:maximum context length|context window|context size|context length)"
    r"\D{0,40}?(\d[\d,]{2,})"
)


def context_limit(detail: str) -> int | None:
    """The window an error message names (``maximum context length is 4096 tokens``)."""
    m = re.search(_LIMIT, detail)
    if not m:
        return None
    try:
        return int(m.group(1).replace(",", ""))
    except ValueError:
        return None


class StatusError(Exception):
    """An HTTP error answer of the endpoint (status >= 400), with its decoded JSON body."""

    def __init__(self, status: int, body: Any, text: str = "") -> None:
        super().__init__(f"HTTP {status}: {text[:300]}")
        self.status_code = status
        self.body = body
        self.text = text


def _status_of(exc: BaseException) -> int | None:
    """The HTTP status of an endpoint's error answer (ours, or an SDK's ``APIStatusError``)."""
    status = getattr(exc, "status_code", None)
    if isinstance(exc, StatusError) or (
        isinstance(status, int) and type(exc).__name__.endswith("Error") and hasattr(exc, "body")
    ):
        return int(status)  # type: ignore[arg-type]
    return None


def classify(exc: BaseException, base_url: str | None, model: str) -> ModelError:
    """Turn an HTTP / transport exception into a ModelError with an actionable message."""
    where = base_url or "the OpenAI API"
    if isinstance(exc, ModelError):
        return exc
    status = _status_of(exc)
    if status == 401:
        return ModelError(
            f"The model endpoint ({where}) rejected the API key (401). Set a valid key in "
            "OPENAI_API_KEY (or c.ThinkConfig.api_key) and restart the kernel.",
            transient=False,
            code="auth",
        )
    if status == 403:
        return ModelError(
            f"The model endpoint ({where}) refused access (403) to model {model!r}. "
            "Check the key's permissions or pick another model with %think_model.",
            transient=False,
            code="permission",
        )
    if status == 404:
        return ModelError(
            f"Model {model!r} was not found at {where} (404). Set THINK_MODEL (or "
            "%think_model NAME) to a model the endpoint serves, and check OPENAI_BASE_URL.",
            transient=False,
            code="model_not_found",
        )
    if status == 429:
        return ModelError(f"rate limited by {where} (429)", transient=True, code="rate_limit")
    if status is not None:
        detail = _detail(exc)
        code = _error_code(exc)
        if status in (400, 413, 422) and (
            code == "context_length_exceeded" or re.search(_CONTEXT_ERRORS, detail)
        ):
            return ModelError(
                f"the request is larger than {model!r}'s context window: {detail}",
                transient=False,
                code="context_length",
                limit=context_limit(detail),
            )
        if status >= 500 or status in (408, 409, 425):
            return ModelError(f"{where} answered {status}: {detail}", True, "server_error")
        return ModelError(f"{where} refused the request ({status}): {detail}", False, "bad_request")
    timeouts, transport = _transport_errors()
    if isinstance(exc, timeouts) or type(exc).__name__ == "APITimeoutError":
        return ModelError(f"{where} timed out", transient=True, code="timeout")
    if isinstance(exc, transport) or type(exc).__name__ == "APIConnectionError":
        return ModelError(
            f"could not reach {where} ({type(exc).__name__}: {exc})",
            transient=True,
            code="connection",
        )
    return ModelError(f"{type(exc).__name__}: {exc}", transient=False)


def _transport_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeouts, transport errors): our client's, and those of httpx (used with a proxy)
    and httpx2 (what openai 3.x is built on) when something in the process loaded them, so an
    SDK-based ModelClient is classified the same way. Neither is imported here (not needed,
    and each costs time)."""
    timeouts: tuple[type[BaseException], ...] = (TransportTimeout,)
    transport: tuple[type[BaseException], ...] = (TransportError, ConnectionError)
    for name in ("httpx", "httpx2"):
        other = sys.modules.get(name)
        if other is not None:
            timeouts += (other.TimeoutException,)
            transport += (other.TransportError,)
    return timeouts, transport


def _error_code(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    err = body.get("error", body) if isinstance(body, dict) else None
    return str(err.get("code") or "") if isinstance(err, dict) else ""


def _detail(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
    text = getattr(exc, "text", None) or getattr(exc, "message", None) or str(exc)
    return str(text)[:300]


class LazyTrustContext(ssl.SSLContext):
    """A TLS client context that loads its trust store at the first handshake.

    It verifies exactly as httpx's default context does (``SSL_CERT_FILE``, else
    ``SSL_CERT_DIR``, else certifi's bundle; hostname checked, certificate required), but
    parsing a CA bundle takes 30-100 ms, paid by every new kernel's first request even when
    the endpoint is a plain-HTTP local server that never shakes hands (issue 17)."""

    _trust_loaded = False

    def _load_trust(self) -> None:
        if self._trust_loaded:
            return
        self._trust_loaded = True
        if os.environ.get("SSL_CERT_FILE"):
            self.load_verify_locations(cafile=os.environ["SSL_CERT_FILE"])
        elif os.environ.get("SSL_CERT_DIR"):
            self.load_verify_locations(capath=os.environ["SSL_CERT_DIR"])
        else:
            import certifi

            self.load_verify_locations(cafile=certifi.where())

    def wrap_socket(self, *args: Any, **kwargs: Any) -> Any:
        """As :class:`ssl.SSLContext`, with the trust store loaded first."""
        self._load_trust()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> Any:
        """As :class:`ssl.SSLContext` (asyncio and anyio use this), trust store first."""
        self._load_trust()
        return super().wrap_bio(*args, **kwargs)


#: What makes httpx (``trust_env``) send through a proxy; any of them set: httpx is used.
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def proxy_configured(environ: Any = None) -> bool:
    """True when a proxy variable (any case) is set: our client does not speak to proxies."""
    env = os.environ if environ is None else environ
    return any(k.lower() in PROXY_VARIABLES and v.strip() for k, v in env.items())


def tls_context() -> ssl.SSLContext:
    """A verifying client context whose trust store loads on first use (see above)."""
    ctx = LazyTrustContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED, hostnames checked
    keylog = os.environ.get("SSLKEYLOGFILE")
    if keylog and not sys.flags.ignore_environment:  # as ssl.create_default_context
        ctx.keylog_filename = keylog
    return ctx


class OpenAIModel:
    """Streaming chat completions from any OpenAI-compatible endpoint (``POST
    {base_url}/chat/completions`` with ``stream: true``; see the module docstring)."""

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        timeout: float = 120.0,
        client: Any = None,
    ) -> None:
        self.base_url = base_url
        self.usage_option = True  # cleared if the endpoint rejects stream_options
        root = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_URL).rstrip("/")
        self.url = f"{root}/chat/completions"
        self.headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"think-jupyter/{__version__}",
        }
        # As the SDK: organisation and project from the environment, when set.
        for env, header in (("OPENAI_ORG_ID", "OpenAI-Organization"),
                            ("OPENAI_PROJECT_ID", "OpenAI-Project")):  # fmt: skip
            if os.environ.get(env):
                self.headers[header] = os.environ[env]
        # Our loop retries with visible status: no silent retries here. Redirects are
        # followed, as the SDK's client does. ``client``: an ``httpx.AsyncClient`` (tests,
        # proxies), else our own.
        self.client: Any = client
        if client is None and proxy_configured():
            import httpx

            self.client = httpx.AsyncClient(
                timeout=httpx.Timeout(timeout), follow_redirects=True, verify=tls_context()
            )
        elif client is None:
            self.client = HTTPClient(timeout, tls_context())

    def warm(self) -> None:
        """Load now what the first request would load (with httpx: anyio's asyncio
        backend, ~30-70 ms); call it on the event loop, ahead of need."""
        if isinstance(self.client, HTTPClient):
            return
        try:
            import anyio

            anyio.Event()  # picks (and imports) the running loop's backend
        except Exception:  # not on a loop, or no anyio: the first request loads it
            pass

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self.client.aclose()

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        model: str,
        *,
        purpose: str = "step",
    ) -> AsyncIterator[Chunk]:
        """Stream one completion; raise ModelError (never transport exceptions)."""
        body: dict[str, Any] = {"model": model, "messages": messages, "stream": True}
        if tools:
            body["tools"] = tools
        if self.usage_option:
            body["stream_options"] = {"include_usage": True}
        try:
            async for chunk in self._stream(body, model, purpose):
                yield chunk
        except ModelError as e:
            # An older server that does not know stream_options: ask again without it (and
            # estimate usage from then on). Nothing was streamed before such a refusal.
            if e.code != "bad_request" or "stream_options" not in str(e) or not self.usage_option:
                raise
            self.usage_option = False
            body.pop("stream_options", None)
            async for chunk in self._stream(body, model, purpose):
                yield chunk

    async def _stream(self, body: dict[str, Any], model: str, purpose: str) -> AsyncIterator[Chunk]:
        finished = False
        headers = {**self.headers, "X-Think-Purpose": purpose}
        try:
            content = encode_body(body)
            if isinstance(self.client, HTTPClient):
                response: Any = await self.client.send("POST", self.url, headers, content)
            else:  # httpx
                request = self.client.build_request(
                    "POST", self.url, content=content, headers=headers
                )
                response = await self.client.send(request, stream=True)
            try:
                if response.status_code >= 400:
                    raise _status_error(response.status_code, await response.aread())
                async with contextlib.aclosing(_gathered(_event_batches(response))) as reads:
                    async for events in reads:
                        for chunk in _merged(_chunks(events)):
                            if chunk.kind == "finish":
                                finished = True
                            yield chunk
            finally:
                await response.aclose()
        except ModelError:
            raise
        except Exception as e:  # HTTP and transport errors become ModelError
            raise classify(e, self.base_url, model) from e
        if not finished:
            raise ModelError(
                "the model stream ended before it finished (connection cut mid-way)",
                transient=True,
                code="stream_cut",
            )


def _status_error(status: int, raw: bytes) -> StatusError:
    text = raw.decode("utf-8", "replace")
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = None
    return StatusError(status, body, text)


#: JSON of read-only messages (the history's, from the model context) by object, and of tool
#: specs by their parts: every request carries the whole history and the same specs, and
#: encoding them anew cost ~1.3 ms a request at 600 messages, growing with the history.
_ENCODED: dict[Any, tuple[Any, bytes]] = {}
_ENCODED_MAX = 50_000


def encode_body(body: dict[str, Any]) -> bytes:
    """``json.dumps(body, ensure_ascii=False)`` as UTF-8, byte for byte, with the messages
    and tools that were encoded before spliced in."""
    parts = []
    for key, value in body.items():
        if key in ("messages", "tools") and isinstance(value, list):
            enc = b"[" + b", ".join(_encoded(item, key) for item in value) + b"]"
        else:
            enc = json.dumps(value, ensure_ascii=False).encode("utf-8")
        parts.append(json.dumps(key).encode("utf-8") + b": " + enc)
    return b"{" + b", ".join(parts) + b"}"


def _encoded(item: Any, kind: str) -> bytes:
    if kind == "messages":
        key: Any = id(item) if type(item) is Frozen else None  # unchangeable: same JSON
    else:
        parts = spec_key(item) if isinstance(item, dict) else None
        key = parts if parts is not None and len(parts) > 1 else None  # (id,): not cacheable
    if key is None:
        return json.dumps(item, ensure_ascii=False).encode("utf-8")
    hit = _ENCODED.get(key)
    if hit is not None and (kind != "messages" or hit[0] is item):
        return hit[1]
    data = json.dumps(item, ensure_ascii=False).encode("utf-8")
    if len(_ENCODED) >= _ENCODED_MAX:
        _ENCODED.clear()
    _ENCODED[key] = (item, data)  # the entry keeps ``item`` (and so its id) alive
    return data


async def _event_batches(response: Any) -> AsyncGenerator[list[dict[str, Any]], None]:
    """The JSON objects of a server-sent event stream, one list per read from the network,
    up to ``data: [DONE]``. An event that carries an ``error`` (a mid-stream failure) raises
    a ModelError with its message.

    Lines are split here rather than by ``aiter_lines`` (three generator layers and a text
    decoder per network read), and everything one read brought is handed on at once: a
    burst of tokens costs the layers above one pass, not one per token (issue 17). The
    exception is the stream's first chunk with content: it is handed on by itself, so the
    first token is not held back while the rest of its read is parsed."""
    buf = b""
    data: list[bytes] = []
    name = b""
    waiting = True  # for the first chunk that says something
    chunks = response.aiter_bytes()
    async for raw in chunks:
        buf += raw
        lines = buf.splitlines(keepends=True)  # \n, \r\n and \r, as SSE allows
        buf = b""
        if lines and (not lines[-1].endswith((b"\n", b"\r")) or lines[-1].endswith(b"\r")):
            buf = lines.pop()  # incomplete, or a \r that a \n may follow in the next read
        batch: list[dict[str, Any]] = []
        for line in lines:
            line = line.rstrip(b"\r\n")
            if line:
                field, _, value = line.partition(b":")
                value = value[1:] if value.startswith(b" ") else value
                if field == b"data":
                    data.append(value)
                elif field == b"event":
                    name = value
                continue
            if not data:
                name = b""
                continue
            text, kind = b"\n".join(data), name
            data, name = [], b""
            if text.startswith(b"[DONE]"):
                if batch:
                    yield batch
                # Read to the end of the body: a response read whole goes back to the pool
                # (one closed early costs the next request a new connection).
                async for _ in chunks:
                    pass
                return
            try:
                obj = json.loads(text)
            except ValueError:
                continue  # a keep-alive or a comment some proxies send
            if not isinstance(obj, dict):
                continue
            if kind == b"error" or obj.get("error"):
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
    """True for a stream chunk with text, reasoning or a tool call in it (as :func:`_chunks`
    reads it)."""
    return any(c.kind in ("text", "reasoning", "tool_call") for c in _chunks([obj]))


_END = object()
HANDOVER = 0.002  # s: the longest a reader keeps what it read while more keeps arriving


async def _gathered(
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


def _chunks(events: list[dict[str, Any]]) -> list[Chunk]:
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


def _merged(chunks: list[Chunk]) -> list[Chunk]:
    """Adjacent text (or reasoning) chunks joined, and adjacent argument pieces of the same
    tool call: the same stream in fewer, larger chunks."""
    out: list[Chunk] = []
    for chunk in chunks:
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
