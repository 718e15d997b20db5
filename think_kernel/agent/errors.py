"""What a failed model call means: :class:`ModelError` and :func:`classify`.

    try:
        ...
    except Exception as e:
        raise classify(e, base_url, model) from e

``transient`` is set for what is worth retrying: 429, 5xx, a connection reset, a timeout, a
stream cut before it finished, and a connection that could not be made to a public host (a
network blip). A refused connection to this machine or the local network is not retried:
nothing listens there, and waiting a few seconds rarely starts a server, so the user hears
at once what to fix. The rest (401, unknown model, bad request) says what to fix too. A
request over the model's context window is ``code="context_length"`` (with the window when
the endpoint names it): the loop compacts and retries once. ``retry_after`` is how long the
endpoint asked us to wait (``Retry-After``), which the loop's backoff honours.
"""

from __future__ import annotations

import email.utils
import ipaddress
import re
import time
from collections.abc import Mapping
from typing import Any

import httpx

#: The longest wait an endpoint's ``Retry-After`` may impose before a retry (seconds): past
#: that the user is better told than kept waiting.
MAX_RETRY_AFTER = 60.0

#: Errors raised before anything was sent (no scheme, a header with a line break or non-ASCII
#: text): a retry would not help.
UNSENDABLE = (httpx.UnsupportedProtocol, httpx.InvalidURL, httpx.LocalProtocolError,
              UnicodeEncodeError)  # fmt: skip

#: Name endings of hosts on the local network (mDNS, cloud-internal, home routers).
LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")


class ModelError(Exception):
    """A failed model call; ``transient`` ones are retried with backoff. ``limit`` is the
    context window the endpoint named in a context-length error, if it did."""

    def __init__(
        self,
        message: str,
        transient: bool,
        code: str = "model_error",
        limit: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.transient = transient
        self.code = code
        self.limit = limit
        self.retry_after = retry_after


class StatusError(Exception):
    """An HTTP error answer of the endpoint (status >= 400), with its decoded JSON body."""

    def __init__(
        self, status: int, body: Any, text: str = "", headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(f"HTTP {status}: {text[:300]}")
        self.status_code = status
        self.body = body
        self.text = text
        self.headers = headers or {}


# How endpoints say a request is over the window: OpenAI and vLLM ("maximum context length
# is 4096 tokens"), llama.cpp ("exceeds the available context size"), LiteLLM / Anthropic
# ("prompt is too long"), Ollama and others ("context window", "too many tokens"). Patterns,
# not compiled ones: only an error needs them (``re`` compiles and caches them then).
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


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the endpoint asks us to wait (``retry-after-ms``, else ``Retry-After`` in
    seconds or as an HTTP date), at most MAX_RETRY_AFTER; None when it says nothing usable."""
    seconds: float | None = None
    try:
        if headers.get("retry-after-ms"):
            seconds = float(headers["retry-after-ms"]) / 1000
        elif headers.get("retry-after"):
            value = headers["retry-after"].strip()
            try:
                seconds = float(value)
            except ValueError:
                seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
    except (ValueError, TypeError, OverflowError):
        return None
    if seconds is None or seconds != seconds or seconds < 0:  # NaN, or a date gone by
        return None
    return min(seconds, MAX_RETRY_AFTER)


def is_local_host(host: str) -> bool:
    """True for this machine and the local network: ``localhost``, loopback, private and
    link-local addresses, single-label names (``ollama`` in a compose network) and names
    under LOCAL_SUFFIXES."""
    host = host.strip("[]").rstrip(".").lower()
    if not host:
        return False
    if host == "localhost" or host.endswith(LOCAL_SUFFIXES):
        return True
    try:
        ip = ipaddress.ip_address(host.partition("%")[0])  # fe80::1%eth0
    except ValueError:
        return "." not in host
    return ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified


def _request_url(exc: BaseException) -> httpx.URL | None:
    try:
        return exc.request.url if isinstance(exc, httpx.RequestError) else None
    except RuntimeError:  # an httpx error raised outside a request
        return None


def classify(exc: BaseException, base_url: str | None, model: str) -> ModelError:
    """Turn an HTTP / transport exception into a ModelError with an actionable message."""
    where = base_url or "the OpenAI API"
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, StatusError):
        return _classify_status(exc, where, model)
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return ModelError(f"{where} timed out", transient=True, code="timeout")
    if isinstance(exc, UNSENDABLE):
        return ModelError(f"the request cannot be sent to {where}: {exc}", False, "bad_request")
    if isinstance(exc, httpx.ConnectError | ConnectionRefusedError):
        url = _request_url(exc)
        try:
            host = (url or httpx.URL(base_url or "https://api.openai.com")).host
        except httpx.InvalidURL:
            host = ""
        if is_local_host(host):
            return ModelError(
                f"cannot connect to {where}: is the server running and the URL right? "
                f"({exc or type(exc).__name__})",
                transient=False,
                code="connection",
            )
    if isinstance(exc, httpx.TransportError | ConnectionError):
        return ModelError(
            f"could not reach {where} ({type(exc).__name__}: {exc})",
            transient=True,
            code="connection",
        )
    return ModelError(f"{type(exc).__name__}: {exc}", transient=False)


def _classify_status(exc: StatusError, where: str, model: str) -> ModelError:
    status = exc.status_code
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
    wait = retry_after(exc.headers)
    if status == 429:
        return ModelError(f"rate limited by {where} (429)", True, "rate_limit", retry_after=wait)
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
        return ModelError(
            f"{where} answered {status}: {detail}", True, "server_error", retry_after=wait
        )
    return ModelError(f"{where} refused the request ({status}): {detail}", False, "bad_request")


def _error_code(exc: StatusError) -> str:
    body = exc.body
    err = body.get("error", body) if isinstance(body, dict) else None
    return str(err.get("code") or "") if isinstance(err, dict) else ""


def _detail(exc: StatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
    return (exc.text or str(exc))[:300]
