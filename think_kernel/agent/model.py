"""Model access: a one-method protocol and its OpenAI-compatible implementation.

    model = OpenAIModel(api_key="...", base_url="http://localhost:11434/v1")
    async for chunk in model.stream(messages, tools=specs, model="llama3.1"):
        ...

Chunks are small tuples of our own (:class:`Chunk`, :mod:`.stream`) so the loop never touches
SDK types; failures are :class:`ModelError` (:mod:`.errors` says which are worth a retry).

Every request asks for the usage chunk (``stream_options.include_usage``); an endpoint that
rejects the option is asked again without it, once per client. ``purpose`` travels in the
``X-Think-Purpose`` header (``step``, ``compaction``, ``tool_summary``, ``title``,
``complete``), which endpoints ignore and proxies can log.

The request is what the ``openai`` SDK's ``chat.completions.create(stream=True)`` sends (same
URL, headers, body and server-sent events), sent without the SDK: importing it (its pydantic
types for every API) takes about a second, and parsing each chunk into pydantic objects cost
more than the chunk. The HTTP client is one ``httpx.AsyncClient`` per endpoint: keep-alive
pool, TLS, redirects, gzip, and the proxy variables (``HTTPS_PROXY``, ``ALL_PROXY``,
``NO_PROXY``, ...) as httpx reads them. Its import is paid ahead, in the preloaded kernel
process and on the ``%load_ext`` thread, not by the first request.
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

import httpx

from .. import __version__
from ..store.history import Frozen
from .errors import ModelError, StatusError, classify, context_limit
from .stream import Chunk, event_batches, gathered, merged
from .stream import chunks as completion_chunks
from .tokens import spec_key

__all__ = [
    "Chunk",
    "ModelClient",
    "ModelError",
    "OpenAIModel",
    "StatusError",
    "classify",
    "context_limit",
    "encode_body",
    "tls_context",
]

#: Where requests go when no base URL is given (as the SDK: ``OPENAI_BASE_URL``, else OpenAI).
DEFAULT_URL = "https://api.openai.com/v1"


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


class LazyTrustContext(ssl.SSLContext):
    """A TLS client context that loads its trust store at the first handshake.

    It verifies exactly as httpx's default context does (``SSL_CERT_FILE``, else
    ``SSL_CERT_DIR``, else certifi's bundle; hostname checked, certificate required), but
    parsing a CA bundle is slow, and every new kernel's first request would pay it even when
    the endpoint is a plain-HTTP local server that never shakes hands."""

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
        client: httpx.AsyncClient | None = None,
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
        # followed, as the SDK's client does (httpx drops the key when one leaves the origin).
        # One timeout for the connect, each write and each read.
        self.client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout), follow_redirects=True, verify=tls_context()
        )

    def warm(self) -> None:
        """Load now what the first request would load (anyio's asyncio backend);
        call it on the event loop, ahead of need."""
        try:
            import anyio

            anyio.Event()  # picks (and imports) the running loop's backend
        except Exception:  # not on a loop: the first request loads it
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
        options: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[Chunk]:
        """Stream one completion; raise ModelError (never transport exceptions). ``options``
        adds body fields of this request only (``max_tokens``, ``temperature``, ``stop``)."""
        body: dict[str, Any] = {"model": model, "messages": messages, "stream": True}
        body.update(options or {})
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
            request = self.client.build_request(
                "POST", self.url, content=encode_body(body), headers=headers
            )
            response = await self.client.send(request, stream=True)
            try:
                if response.status_code >= 400:
                    raw = await response.aread()
                    raise _status_error(response.status_code, raw, response.headers)
                batches = event_batches(response.aiter_bytes())
                async with contextlib.aclosing(gathered(batches)) as reads:
                    async for events in reads:
                        for chunk in merged(completion_chunks(events)):
                            if chunk.kind == "finish":
                                finished = True
                            yield chunk
            finally:
                # Read to its end, the connection goes back to the pool; cut short (Stop,
                # an error), it is closed.
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


def _status_error(status: int, raw: bytes, headers: httpx.Headers) -> StatusError:
    text = raw.decode("utf-8", "replace")
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = None
    return StatusError(status, body, text, headers)


#: JSON of read-only messages (the history's, from the model context) by object, and of tool
#: specs by their parts: every request carries the whole history and the same specs, and
#: encoding them anew for every request would cost more as the history grows.
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
