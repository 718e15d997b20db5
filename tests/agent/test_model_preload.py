"""The kernel preload pays the model client's imports: once it ran, building the client and
its first request import nothing (httpx loads httpcore with its first client, and anyio's
backend with its first request)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CODE = """
import asyncio, json, sys
from think_kernel.kernel import preload
preload._preload()
from tests.fake_model import FakeModel
fm = FakeModel().start()
fm.reply(text="hi")

async def first_request():
    from think_kernel.agent.model import OpenAIModel
    before = set(sys.modules)
    model = OpenAIModel("k", fm.url)
    model.warm()
    text = ""
    async for chunk in model.stream([{"role": "user", "content": "x"}], [], "m"):
        text += chunk.text if chunk.kind == "text" else ""
    await model.aclose()
    return text, sorted(set(sys.modules) - before)

text, new = asyncio.run(first_request())
fm.stop()
print(json.dumps({"text": text, "new": new}))
"""


@pytest.mark.slow
def test_the_first_request_after_the_preload_imports_nothing() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CODE], cwd=ROOT, capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["text"] == "hi"
    assert result["new"] == [], result["new"]
