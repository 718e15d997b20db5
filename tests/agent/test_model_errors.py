"""Error classification: raw transport errors that escape mid-stream are transient."""

from __future__ import annotations

import httpx
import pytest

from think_kernel.agent.model import classify

try:
    import httpx2  # what openai 3.x is built on
except ImportError:  # pragma: no cover - an openai built on httpx
    httpx2 = httpx  # type: ignore[no-redef]


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (httpx2.ReadError("connection reset"), "connection"),
        (httpx2.RemoteProtocolError("peer closed mid-chunk"), "connection"),
        (httpx2.ReadTimeout("read timeout"), "timeout"),
        (httpx.ReadError("connection reset"), "connection"),
        (ConnectionResetError("reset"), "connection"),
    ],
)
def test_raw_transport_errors_are_retried(exc: Exception, code: str) -> None:
    err = classify(exc, "http://model.local/v1", "m")
    assert err.transient and err.code == code


def test_unknown_errors_are_permanent_with_their_text() -> None:
    err = classify(ValueError("bad"), None, "m")
    assert not err.transient and "ValueError: bad" in str(err)
