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
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import httpx
import openai
from openai.types.chat import ChatCompletionChunk

# The openai SDK wraps transport errors in APIConnectionError / APITimeoutError, but a raw one
# can still escape while a stream is read. openai 3.x is built on httpx2, older on httpx.
_TIMEOUTS: tuple[type[BaseException], ...] = (httpx.TimeoutException,)
_TRANSPORT: tuple[type[BaseException], ...] = (httpx.TransportError, ConnectionError)
try:
    import httpx2

    _TIMEOUTS += (httpx2.TimeoutException,)
    _TRANSPORT += (httpx2.TransportError,)
except ImportError:  # an openai release built on httpx
    pass


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
# ("prompt is too long"), Ollama and others ("context window", "too many tokens").
_CONTEXT_ERRORS = re.compile(
    r"context[_ ]length|context[_ ]window|maximum context|context size|prompt is too long"
    r"|too many tokens|reduce the length|input is too long|exceeds? the (?:model's )?(?:max|limit)",
    re.IGNORECASE,
)
_LIMIT = re.compile(
    r"(?:maximum context length|context window|context size|context length)"
    r"\D{0,40}?(\d[\d,]{2,})",
    re.IGNORECASE,
)


def context_limit(detail: str) -> int | None:
    """The window an error message names (``maximum context length is 4096 tokens``)."""
    m = _LIMIT.search(detail)
    if not m:
        return None
    try:
        return int(m.group(1).replace(",", ""))
    except ValueError:
        return None


def classify(exc: BaseException, base_url: str | None, model: str) -> ModelError:
    """Turn an SDK / transport exception into a ModelError with an actionable message."""
    where = base_url or "the OpenAI API"
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, openai.AuthenticationError):
        return ModelError(
            f"The model endpoint ({where}) rejected the API key (401). Set a valid key in "
            "OPENAI_API_KEY (or c.ThinkConfig.api_key) and restart the kernel.",
            transient=False,
            code="auth",
        )
    if isinstance(exc, openai.PermissionDeniedError):
        return ModelError(
            f"The model endpoint ({where}) refused access (403) to model {model!r}. "
            "Check the key's permissions or pick another model with %think_model.",
            transient=False,
            code="permission",
        )
    if isinstance(exc, openai.NotFoundError):
        return ModelError(
            f"Model {model!r} was not found at {where} (404). Set THINK_MODEL (or "
            "%think_model NAME) to a model the endpoint serves, and check OPENAI_BASE_URL.",
            transient=False,
            code="model_not_found",
        )
    if isinstance(exc, openai.RateLimitError):
        return ModelError(f"rate limited by {where} (429)", transient=True, code="rate_limit")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = _detail(exc)
        code = _error_code(exc)
        if status in (400, 413, 422) and (
            code == "context_length_exceeded" or _CONTEXT_ERRORS.search(detail)
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
    if isinstance(exc, (openai.APITimeoutError, *_TIMEOUTS)):
        return ModelError(f"{where} timed out", transient=True, code="timeout")
    if isinstance(exc, (openai.APIConnectionError, *_TRANSPORT)):
        return ModelError(
            f"could not reach {where} ({type(exc).__name__}: {exc})",
            transient=True,
            code="connection",
        )
    return ModelError(f"{type(exc).__name__}: {exc}", transient=False)


def _error_code(exc: openai.APIStatusError) -> str:
    body = exc.body
    err = body.get("error", body) if isinstance(body, dict) else None
    return str(err.get("code") or "") if isinstance(err, dict) else ""


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
    return str(exc.message)[:300]


class OpenAIModel:
    """Streaming chat completions through ``openai.AsyncOpenAI`` (any compatible endpoint)."""

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        timeout: float = 120.0,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        self.base_url = base_url
        self.usage_option = True  # cleared if the endpoint rejects stream_options
        # Our loop retries with visible status, so the SDK must not retry silently.
        self.client = client or openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout
        )

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self.client.close()

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        model: str,
        *,
        purpose: str = "step",
    ) -> AsyncIterator[Chunk]:
        """Stream one completion; raise ModelError (never SDK exceptions)."""
        kwargs: dict[str, Any] = {"model": model, "messages": messages, "stream": True}
        if tools:
            kwargs["tools"] = tools
        if self.usage_option:
            kwargs["stream_options"] = {"include_usage": True}
        try:
            async for chunk in self._stream(kwargs, model, purpose):
                yield chunk
        except ModelError as e:
            # An older server that does not know stream_options: ask again without it (and
            # estimate usage from then on). Nothing was streamed before such a refusal.
            if e.code != "bad_request" or "stream_options" not in str(e) or not self.usage_option:
                raise
            self.usage_option = False
            kwargs.pop("stream_options", None)
            async for chunk in self._stream(kwargs, model, purpose):
                yield chunk

    async def _stream(
        self, kwargs: dict[str, Any], model: str, purpose: str
    ) -> AsyncIterator[Chunk]:
        finished = False
        try:
            # The same request as client.chat.completions.create(**kwargs), posted through the
            # SDK's own client (auth, errors, SSE parsing, AsyncStream) but without its
            # recursive TypedDict transform of messages and tools: our bodies are plain JSON
            # already, and that transform cost ~10 ms per call, growing with history.
            stream = await self.client.post(
                "/chat/completions",
                body=kwargs,
                cast_to=ChatCompletionChunk,
                stream=True,
                stream_cls=openai.AsyncStream[ChatCompletionChunk],
                options={"headers": {"X-Think-Purpose": purpose}},
            )
            async with stream:
                async for event in stream:
                    usage = getattr(event, "usage", None)
                    if usage is not None:
                        yield _usage_chunk(usage)
                    for choice in event.choices or ():
                        delta = choice.delta
                        if delta is not None:
                            for chunk in _delta_chunks(delta):
                                yield chunk
                        if choice.finish_reason:
                            finished = True
                            yield Chunk("finish", text=choice.finish_reason)
        except ModelError:
            raise
        except Exception as e:  # SDK and transport errors become ModelError
            raise classify(e, self.base_url, model) from e
        if not finished:
            raise ModelError(
                "the model stream ended before it finished (connection cut mid-way)",
                transient=True,
                code="stream_cut",
            )


def _usage_chunk(usage: Any) -> Chunk:
    prompt = getattr(usage, "prompt_tokens_details", None)
    completion = getattr(usage, "completion_tokens_details", None)
    return Chunk(
        "usage",
        tokens_in=usage.prompt_tokens or 0,
        tokens_out=usage.completion_tokens or 0,
        tokens_cached=(getattr(prompt, "cached_tokens", None) or 0) if prompt else 0,
        tokens_reasoning=(getattr(completion, "reasoning_tokens", None) or 0) if completion else 0,
    )


def _delta_chunks(delta: Any) -> list[Chunk]:
    out: list[Chunk] = []
    # Reasoning comes under different names depending on the server (vLLM, DeepSeek,
    # Ollama, OpenRouter); take whichever is present.
    extra = getattr(delta, "model_extra", None) or {}
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key) or getattr(delta, key, None)
        if isinstance(value, str) and value:
            out.append(Chunk("reasoning", text=value))
            break
    if delta.content:
        out.append(Chunk("text", text=delta.content))
    for tc in delta.tool_calls or ():
        fn = tc.function
        out.append(
            Chunk(
                "tool_call",
                index=tc.index if tc.index is not None else 0,
                call_id=tc.id or "",
                name=(fn.name if fn else None) or "",
                arguments=(fn.arguments if fn else None) or "",
            )
        )
    return out
