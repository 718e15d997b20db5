"""``%load_ext think_kernel`` and ``%think`` / ``%%think`` in a real ``python3`` kernel."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_model import FakeModel
from tests.kernel.conftest import Kernel, kernel_env, markdown_of, start_kernel, workspace_in
from think_kernel.kernel.namespace import describe, summarize_namespace

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def py_kernel(tmp_path_factory: pytest.TempPathFactory, fm: FakeModel) -> Iterator[Kernel]:
    tmp = tmp_path_factory.mktemp("py")
    kernel = start_kernel(workspace_in(tmp), kernel_env(tmp, fm), name="python3")
    reply, outputs = kernel.execute("%load_ext think_kernel")
    assert reply["status"] == "ok", outputs
    yield kernel
    kernel.stop()


def test_think_cell_sees_the_namespace_and_keeps_the_answer(
    py_kernel: Kernel, model: FakeModel
) -> None:
    reply, _ = py_kernel.execute(
        "import pandas as pd\n"
        "df = pd.DataFrame({'price': [1.5, 2.0], 'city': ['Oslo', 'Rome']})\n"
        "xs = [1, 2, 3]\nconfig = {'k': 1}\n_private = 1\nbig = list(range(100000))"
    )
    assert reply["status"] == "ok"
    model.reply(tool_calls=[("list_files", {})])
    model.reply(text="df has **price** and city.")
    reply, outputs = py_kernel.execute("%%think -o answer\nwhat columns does df have?")
    assert reply["status"] == "ok", reply
    first = model.wait_for_requests(1)[0]["messages"][-1]["content"]
    assert first.startswith("what columns does df have?")
    assert "df: DataFrame shape=(2, 2) columns=['price', 'city']" in first
    assert "xs: list len=3 [1, 2, 3]" in first and "config: dict len=1" in first
    assert "big: list len=100000" in first and "99999" not in first
    assert "_private" not in first and "pd:" not in first and "In:" not in first
    final = markdown_of(outputs)
    assert "> ▸ **list_files** · ✓" in final
    assert final.rstrip().endswith("df has **price** and city.")
    ids = {m["content"]["transient"]["display_id"] for m in outputs if "transient" in m["content"]}
    assert len(ids) == 1

    reply, outputs = py_kernel.execute("print(answer)")
    assert [m["content"]["text"] for m in outputs if m["msg_type"] == "stream"] == [
        "df has **price** and city.\n"
    ]


def test_a_fast_cell_shows_its_transcript_once_a_slow_one_live(
    py_kernel: Kernel, model: FakeModel
) -> None:
    def shown(outputs: list[dict]) -> list[tuple[str, str]]:
        return [
            (m["msg_type"], m["content"]["data"]["text/markdown"])
            for m in outputs
            if m["msg_type"] in ("display_data", "update_display_data")
            and "text/markdown" in m["content"]["data"]
        ]

    # A run that ends within the display interval (here a long one, so the test does not
    # depend on the machine's speed) is shown once, finished: no display, then updates.
    reply, _ = py_kernel.execute("%think_config display_interval=30")
    assert reply["status"] == "ok"
    model.reply(text="Quick answer.")
    reply, outputs = py_kernel.execute("%%think\nquick one")
    assert reply["status"] == "ok"
    seen = shown(outputs)
    assert len(seen) == 1 and seen[0][0] == "display_data", seen
    assert seen[0][1].strip() == "Quick answer."
    # A model that takes its time: the transcript is up (thinking) long before the answer,
    # then updated in place.
    reply, _ = py_kernel.execute("%think_config display_interval=0.05")
    assert reply["status"] == "ok"
    model.reply(text="Slow answer.", first_delay=1.0)
    reply, outputs = py_kernel.execute("%%think\nslow one")
    assert reply["status"] == "ok"
    seen = shown(outputs)
    assert seen[0][0] == "display_data" and "Slow answer." not in seen[0][1], seen
    assert [kind for kind, _ in seen[1:]] == ["update_display_data"] * (len(seen) - 1), seen
    assert seen[-1][1].strip() == "Slow answer."


def test_line_magic_and_session_commands(py_kernel: Kernel, model: FakeModel) -> None:
    model.reply(text="Hello from the line magic.")
    reply, outputs = py_kernel.execute("%think say hello")
    assert reply["status"] == "ok"
    assert markdown_of(outputs).strip() == "Hello from the line magic."
    reply, outputs = py_kernel.execute("%think_status")
    assert "fake-model" in outputs[0]["content"]["data"]["text/markdown"]
    reply, outputs = py_kernel.execute("%think_session")
    assert "messages" in outputs[0]["content"]["data"]["text/markdown"]


def test_interrupting_a_think_cell_keeps_the_kernel(py_kernel: Kernel, model: FakeModel) -> None:
    model.reply(text="A long answer begins", hang=True)
    msg_id = py_kernel.kc.execute("%%think\nwrite an essay")
    py_kernel.wait_output(
        msg_id, lambda m: "long answer" in m["content"].get("data", {}).get("text/markdown", "")
    )
    t0 = time.monotonic()
    py_kernel.km.interrupt_kernel()
    # The run is cancelled at once; IPython then formats the KeyboardInterrupt traceback,
    # which takes up to a second the first time (it imports its traceback machinery).
    py_kernel.wait_output(
        msg_id, lambda m: "*Interrupted.*" in m["content"].get("data", {}).get("text/markdown", "")
    )
    assert time.monotonic() - t0 < 1.0
    reply, outputs = py_kernel.collect(msg_id, timeout=10)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    reply, outputs = py_kernel.execute("print(1 + 1)")
    assert reply["status"] == "ok"


def test_load_ext_is_fast(tmp_path: Path, fm: FakeModel) -> None:
    kernel = start_kernel(workspace_in(tmp_path), kernel_env(tmp_path, fm), name="python3")
    try:
        reply, outputs = kernel.execute(
            "import time\nt0 = time.perf_counter()\n"
            "get_ipython().run_line_magic('load_ext', 'think_kernel')\n"
            "print(time.perf_counter() - t0)"
        )
        assert reply["status"] == "ok"
        seconds = float(next(m for m in outputs if m["msg_type"] == "stream")["content"]["text"])
        assert seconds < 0.3, seconds
    finally:
        kernel.stop()


def test_namespace_summary_is_bounded() -> None:
    ns = {f"v{i}": "x" * 10_000 for i in range(500)}
    text = summarize_namespace(ns)
    assert len(text) < 7000 and "more variables" in text
    assert len(describe("s", "y" * 10_000)) <= 200
