"""Error classification: transport errors that escape mid-stream are transient; a refused
connection is retried for a public host only; Retry-After is read."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest

from think_kernel.agent.errors import MAX_RETRY_AFTER, is_local_host, retry_after
from think_kernel.agent.model import classify


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (httpx.ReadError("connection reset"), "connection"),
        (httpx.RemoteProtocolError("peer closed mid-chunk"), "connection"),
        (httpx.ReadTimeout("read timeout"), "timeout"),
        (httpx.ConnectTimeout("connect timeout"), "timeout"),
        (ConnectionResetError("reset"), "connection"),
    ],
)
def test_raw_transport_errors_are_retried(exc: Exception, code: str) -> None:
    err = classify(exc, "http://model.local/v1", "m")
    assert err.transient and err.code == code


def refused(url: str) -> httpx.ConnectError:
    return httpx.ConnectError("[Errno 111] Connection refused", request=httpx.Request("POST", url))


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:11434/v1",
        "http://localhost:8000/v1",
        "http://[::1]:8000/v1",
        "http://10.1.2.3/v1",
        "http://192.168.1.20:1234/v1",
        "http://169.254.0.9/v1",
        "http://ollama:11434/v1",  # a compose service name
        "http://gpu-box.local/v1",
    ],
)
def test_a_refused_local_endpoint_is_not_retried(url: str) -> None:
    err = classify(refused(url), url, "m")
    assert not err.transient and err.code == "connection"
    assert "is the server running and the URL right?" in str(err)


@pytest.mark.parametrize("url", ["https://api.openai.com/v1", "http://8.8.8.8/v1"])
def test_a_refused_public_endpoint_is_retried(url: str) -> None:
    err = classify(refused(url), url, "m")
    assert err.transient and err.code == "connection"


def test_the_default_endpoint_is_public() -> None:
    assert classify(refused("https://api.openai.com/v1/chat/completions"), None, "m").transient
    assert classify(ConnectionRefusedError("refused"), None, "m").transient
    assert not classify(ConnectionRefusedError("refused"), "http://localhost:1/v1", "m").transient


def test_local_hosts() -> None:
    assert is_local_host("LOCALHOST.") and is_local_host("api.localhost")
    assert is_local_host("fe80::1%eth0") and is_local_host("0.0.0.0")
    assert (
        not is_local_host("api.openai.com")
        and not is_local_host("")
        and not is_local_host("2606:4700::1111")
    )


def test_retry_after_forms() -> None:
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    wait = retry_after({"retry-after": later})
    assert wait is not None and 25 < wait <= 30
    assert retry_after({"retry-after": "999999"}) == MAX_RETRY_AFTER
    for bad in ("soon", "-1", "nan", email.utils.formatdate(time.time() - 60, usegmt=True)):
        assert retry_after({"retry-after": bad}) is None, bad
    assert retry_after({}) is None


def test_unknown_errors_are_permanent_with_their_text() -> None:
    err = classify(ValueError("bad"), None, "m")
    assert not err.transient and "ValueError: bad" in str(err)
