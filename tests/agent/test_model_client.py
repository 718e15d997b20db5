"""The model client on the wire, against the scripted endpoint: what it sends, how it reads
the event stream, and how each failure is classified (no SDK on the first path)."""

from __future__ import annotations

import asyncio
import json
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fake_model import FakeModel
from think_kernel.agent.model import Chunk, LazyTrustContext, ModelError, OpenAIModel, tls_context

MESSAGES = [{"role": "user", "content": "hi"}]
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


async def collect(
    model: OpenAIModel, name: str = "m", purpose: str = "step", messages: Any = None
) -> list[Chunk]:
    try:
        msgs = messages or MESSAGES
        return [c async for c in model.stream(msgs, TOOLS, name, purpose=purpose)]
    finally:
        await model.aclose()


async def failure(fm: FakeModel, **reply: Any) -> ModelError:
    fm.reply(**reply)
    with pytest.raises(ModelError) as info:
        await collect(OpenAIModel("k", fm.url))
    return info.value


async def test_stream_text_reasoning_tool_calls_and_usage(fake_model: FakeModel) -> None:
    fake_model.reply(text="Hello there", reasoning="hmm", tool_calls=[("f", {"x": 1})],
                     cached_tokens=2, reasoning_tokens=3)  # fmt: skip
    chunks = await collect(OpenAIModel("k", fake_model.url))
    kinds = [c.kind for c in chunks]
    assert "".join(c.text for c in chunks if c.kind == "text") == "Hello there"
    assert "".join(c.text for c in chunks if c.kind == "reasoning") == "hmm"
    calls = [c for c in chunks if c.kind == "tool_call"]
    assert calls[0].name == "f" and calls[0].call_id.startswith("call_")
    assert "".join(c.arguments for c in calls) == '{"x": 1}'
    assert [c.text for c in chunks if c.kind == "finish"] == ["tool_calls"]
    usage = next(c for c in chunks if c.kind == "usage")
    assert usage.tokens_in > 0 and usage.tokens_cached == 2 and usage.tokens_out > 3
    assert usage.tokens_reasoning == 3
    assert kinds.index("finish") < kinds.index("usage")
    body = fake_model.requests[0]
    assert body["stream"] is True and body["model"] == "m" and body["tools"] == TOOLS
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == MESSAGES


async def test_headers_key_purpose_and_organisation(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-1")
    fake_model.reply(text="ok")
    await collect(OpenAIModel("sk-abc", fake_model.url), purpose="step")
    headers = {k.lower(): v for k, v in fake_model.headers[0].items()}
    assert headers["authorization"] == "Bearer sk-abc"
    assert headers["x-think-purpose"] == "step"
    assert headers["openai-organization"] == "org-1"
    assert headers["openai-project"] == "proj-1"
    assert headers["content-type"] == "application/json"


async def test_base_url_from_the_environment(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_model.url + "/")
    fake_model.reply(text="ok")
    chunks = await collect(OpenAIModel("k"))
    assert "".join(c.text for c in chunks if c.kind == "text") == "ok"


async def test_http_errors_are_classified(fake_model: FakeModel) -> None:
    assert (await failure(fake_model, error=429)).code == "rate_limit"
    err = await failure(fake_model, error=503)
    assert err.code == "server_error" and err.transient and "scripted error 503" in str(err)
    err = await failure(fake_model, error=400, error_message="bad tools")
    assert err.code == "bad_request" and not err.transient and "bad tools" in str(err)


async def test_auth_unknown_model_and_context_length() -> None:
    fm = FakeModel(api_key="right", models={"known"}).start()
    try:
        with pytest.raises(ModelError) as info:
            await collect(OpenAIModel("wrong", fm.url), "known")
        assert info.value.code == "auth" and not info.value.transient
        with pytest.raises(ModelError) as info:
            await collect(OpenAIModel("right", fm.url), "other")
        assert info.value.code == "model_not_found"
        fm.context_window = 100
        long = [{"role": "user", "content": "word " * 200}]
        with pytest.raises(ModelError) as info:
            await collect(OpenAIModel("right", fm.url), "known", messages=long)
        assert info.value.code == "context_length" and info.value.limit == 100
    finally:
        fm.stop()


async def test_cut_stream_and_error_event(fake_model: FakeModel) -> None:
    err = await failure(fake_model, text="a long answer", cut=True)
    assert err.transient and err.code in ("stream_cut", "connection")  # cut mid-chunk or after
    err = await failure(fake_model, text="partial", stream_error="the GPU is on fire")
    assert "the GPU is on fire" in str(err) and not err.transient


async def test_stream_options_rejected_asks_again_without(fake_model: FakeModel) -> None:
    fake_model.reject_stream_options = True
    fake_model.reply(text="ok")  # the first request is refused before it takes a reply
    model = OpenAIModel("k", fake_model.url)
    chunks = await collect(model)
    assert "".join(c.text for c in chunks if c.kind == "text") == "ok"
    assert "stream_options" in fake_model.requests[0]
    assert "stream_options" not in fake_model.requests[1] and not model.usage_option


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
async def test_line_endings_and_bursts_in_one_read(fake_model: FakeModel, newline: str) -> None:
    words = [f"w{i} " for i in range(300)]
    fake_model.reply(tokens=words, tool_calls=[("f", {"text": "x" * 200})], newline=newline,
                     together=True)  # fmt: skip
    chunks = await collect(OpenAIModel("k", fake_model.url))
    texts = [c.text for c in chunks if c.kind == "text"]
    assert "".join(texts) == "".join(words)
    # Tokens that arrived together went up the stack together, not one chunk per token.
    assert len(texts) < 50
    calls = [c for c in chunks if c.kind == "tool_call"]
    assert "".join(c.arguments for c in calls) == json.dumps({"text": "x" * 200})
    assert calls[0].name == "f" and calls[0].call_id
    assert [c.kind for c in chunks][-2:] == ["finish", "usage"]


async def test_the_first_token_of_a_burst_goes_up_alone(fake_model: FakeModel) -> None:
    words = [f"w{i} " for i in range(20)]
    fake_model.reply(tokens=words, together=True)  # one write: one read
    chunks = await collect(OpenAIModel("k", fake_model.url))
    texts = [c.text for c in chunks if c.kind == "text"]
    # The first chunk with content is not merged with what followed it in the same read
    # (nor held back while that is parsed); the rest of the read goes up together.
    assert texts == ["w0 ", "".join(words[1:])]


@pytest.mark.slow
def test_the_model_client_does_not_import_the_openai_sdk() -> None:
    code = "import sys, think_kernel.agent.model; print('openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _certificates(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A CA, and a certificate for 127.0.0.1 it signed (files: ca, cert, key)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "think test CA")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name).public_key(key.public_key()).serial_number(2)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    files = tmp_path / "ca.pem", tmp_path / "cert.pem", tmp_path / "key.pem"
    files[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return files


async def test_tls_trust_store_loads_at_the_first_handshake_and_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_model: FakeModel
) -> None:
    ca, cert, key = _certificates(tmp_path)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    tls_model = FakeModel().start(ssl_context=server_ctx)
    try:
        assert tls_model.url.startswith("https://")
        monkeypatch.setenv("SSL_CERT_FILE", str(ca))
        tls_model.reply(text="secure")
        model = OpenAIModel("k", tls_model.url)
        chunks = await collect(model)
        assert "".join(c.text for c in chunks if c.kind == "text") == "secure"
        # A trust store without our CA: the handshake fails, nothing is sent.
        (tmp_path / "other").mkdir()
        monkeypatch.setenv("SSL_CERT_FILE", str(_certificates(tmp_path / "other")[0]))
        with pytest.raises(ModelError) as info:
            await collect(OpenAIModel("k", tls_model.url))
        assert info.value.code == "connection" and "CERTIFICATE_VERIFY_FAILED" in str(info.value)
        assert len(tls_model.requests) == 1
    finally:
        tls_model.stop()
    # Plain HTTP never loads a trust store.
    fake_model.reply(text="plain")
    model = OpenAIModel("k", fake_model.url)
    context = tls_context()
    model.client = httpx.AsyncClient(verify=context)
    await collect(model)
    assert isinstance(context, LazyTrustContext) and not context._trust_loaded


async def test_connections_are_reused_between_requests(fake_model: FakeModel) -> None:
    model = OpenAIModel("k", fake_model.url)
    try:
        for text in ("one", "two", "three"):
            fake_model.reply(text=text)
            chunks = [c async for c in model.stream(MESSAGES, [], "m")]
            assert "".join(c.text for c in chunks if c.kind == "text") == text
        assert len(fake_model.connections) == 1, fake_model.connections
    finally:
        await model.aclose()


async def test_what_arrives_while_the_consumer_is_busy_comes_as_one_chunk(
    fake_model: FakeModel,
) -> None:
    words = [f"w{i} " for i in range(100)]
    fake_model.reply(tokens=words, delay=0.001)  # a token a millisecond
    model = OpenAIModel("k", fake_model.url)
    texts: list[str] = []
    try:
        async for chunk in model.stream(MESSAGES, [], "m"):
            if chunk.kind == "text":
                texts.append(chunk.text)
                if len(texts) == 1:
                    await asyncio.sleep(0.05)  # busy: ~50 tokens arrive meanwhile
    finally:
        await model.aclose()
    assert "".join(texts) == "".join(words)
    assert texts[0] == "w0 "  # the first token is handed over at once, alone
    assert len(texts[1]) > 10 * len("w1 ")  # what came meanwhile, together


def test_request_body_is_json_dumps_byte_for_byte_with_encodings_reused() -> None:
    """The body splices in the JSON of read-only messages and of tool specs encoded before;
    the bytes are json.dumps's, and a changed spec or a new message is encoded anew."""
    import json as _json

    from think_kernel.agent import model as model_module
    from think_kernel.store.history import Frozen

    params = {"type": "object", "properties": {"path": {"type": "string"}}}
    specs = [
        {
            "type": "function",
            "function": {"name": "read", "description": "Read ☃", "parameters": params},
        }
    ]
    history = [
        Frozen({"role": "user", "content": 'héllo \u2028 "q"'}),
        Frozen(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "read", "arguments": "{}"}}
                ],
            }
        ),
    ]
    for turn in range(3):
        messages = [
            {"role": "system", "content": "sys"},
            *history,
            {"role": "user", "content": f"now {turn}"},
        ]
        body = {
            "model": "m",
            "messages": messages,
            "stream": True,
            "tools": specs,
            "stream_options": {"include_usage": True},
        }
        assert model_module.encode_body(body) == _json.dumps(body, ensure_ascii=False).encode()
        assert id(history[0]) in model_module._ENCODED
    # A spec rebuilt around the same parts hits; a new description does not.
    specs = [
        {
            "type": "function",
            "function": {"name": "read", "description": "Read it", "parameters": params},
        }
    ]
    body = {"model": "m", "messages": [], "tools": specs}
    assert model_module.encode_body(body) == _json.dumps(body, ensure_ascii=False).encode()
