"""Warm state, fresh isolation, live streaming, rich output, interrupt, error categories."""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path

import pytest
from sandbox_helpers import (
    host_pid_of,
    leftovers,
    make_config,
    maps_mention,
    parent_of,
)

from tests.waiting import until
from think_kernel.sandbox import Sandbox, SandboxError, Tier
from think_kernel.tools.base import ToolContext, ToolRegistry
from think_kernel.tools.code import CODE_TOOLS

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_warm_state_persists_and_fresh_is_isolated(sandbox: Sandbox) -> None:
    assert (await sandbox.run_python("counter = 41\nimport json")).ok
    res = await sandbox.run_python("counter += 1\nprint(counter, json.dumps([1]))")
    assert res.stdout == "42 [1]\n"
    fresh = await sandbox.run_python("print(counter)", fresh=True)
    assert fresh.error_category == "runtime" and "NameError" in fresh.error
    assert (await sandbox.run_python("only_fresh = 1", fresh=True)).ok
    res = await sandbox.run_python("print('only_fresh' in globals(), counter)")
    assert res.stdout == "False 42\n"


async def test_stdout_streams_before_the_process_ends(sandbox: Sandbox) -> None:
    flag = sandbox.workspace / "go.flag"
    flag.unlink(missing_ok=True)
    got_first = asyncio.Event()
    chunks: list[tuple[str, str]] = []

    def on_output(stream: str, text: str) -> None:
        chunks.append((stream, text))
        if "first" in text:
            got_first.set()

    code = (
        "import os, sys, time\nprint('first')\nprint('err-line', file=sys.stderr)\n"
        "while not os.path.exists('go.flag'): time.sleep(0.01)\nprint('second')\n"
    )
    for fresh in (False, True):
        got_first.clear()
        chunks.clear()
        task = asyncio.ensure_future(sandbox.run_python(code, fresh=fresh, on_output=on_output))
        await asyncio.wait_for(got_first.wait(), 10)
        assert not task.done()  # the code is still waiting for us: streaming is live
        flag.write_text("go")
        res = await task
        flag.unlink()
        assert res.ok and res.stdout == "first\nsecond\n" and res.stderr == "err-line\n"
        assert ("stderr", "err-line\n") in chunks
    bash_first = asyncio.Event()
    task = asyncio.ensure_future(
        sandbox.run_bash(
            "echo first; while [ ! -e go.flag ]; do sleep 0.01; done; echo second",
            on_output=lambda s, t: bash_first.set() if "first" in t else None,
        )
    )
    await asyncio.wait_for(bash_first.wait(), 10)
    assert not task.done()
    flag.write_text("go")
    assert (await task).stdout == "first\nsecond\n"
    flag.unlink()


async def test_rich_output_figure_and_dataframe(sandbox: Sandbox) -> None:
    code = (
        "import matplotlib.pyplot as plt, pandas as pd\n"
        "plt.plot([1, 2, 3], [1, 4, 9])\nplt.title('squares')\n"
        "pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})\n"
    )
    for fresh in (False, True):
        res = await sandbox.run_python(code, fresh=fresh)
        assert res.ok, res
        kinds = [sorted(b) for b in res.outputs]
        assert ["text/html", "text/plain"] in kinds and ["image/png", "text/plain"] in kinds
        png = next(b["image/png"] for b in res.outputs if "image/png" in b)
        assert base64.b64decode(png).startswith(b"\x89PNG\r\n\x1a\n")
        html = next(b["text/html"] for b in res.outputs if "text/html" in b)
        assert "<table" in html and "<td>x</td>" in html
    res = await sandbox.run_python("display({'text/plain': 'hi', 'text/markdown': '# hi'})\n3")
    assert res.outputs == [{"text/plain": "hi", "text/markdown": "# hi"}, {"text/plain": "3"}]


async def test_interrupt_kills_within_200_ms(sandbox: Sandbox) -> None:
    started = asyncio.Event()

    def on_output(stream: str, text: str) -> None:
        if "spinning" in text:
            started.set()

    cases = [
        lambda: sandbox.run_python("print('spinning')\nwhile True: pass", on_output=on_output),
        lambda: sandbox.run_python(
            "import subprocess\nsubprocess.Popen(['sleep', '100'])\nprint('spinning')\n"
            "while True: pass",
            fresh=True,
            on_output=on_output,
        ),
        lambda: sandbox.run_bash(
            "sleep 100 & echo spinning; while :; do :; done", on_output=on_output
        ),
    ]
    for case in cases:
        started.clear()
        task = asyncio.ensure_future(case())
        await asyncio.wait_for(started.wait(), 10)
        t0 = time.perf_counter()
        await sandbox.interrupt()
        res = await task
        elapsed = time.perf_counter() - t0
        assert res.error_category == "killed" and "interrupted" in res.error
        assert elapsed < 0.2, elapsed
        assert await until(lambda: not leftovers(sandbox), 2, every=0.02)
    res = await sandbox.run_python("print('still here')")
    assert res.ok and res.stdout == "still here\n"
    assert any("restarted" in w for w in (await sandbox.run_python("1")).warnings) is False


async def test_error_categories_and_trimmed_traceback(sandbox: Sandbox) -> None:
    syn = await sandbox.run_python("def f(:\n  pass")
    assert syn.error_category == "syntax" and "SyntaxError" in syn.traceback
    rt = await sandbox.run_python("def f():\n    return 1 / 0\nf()", fresh=True)
    assert rt.error_category == "runtime" and rt.error.startswith("ZeroDivisionError")
    assert "<cell-" in rt.traceback and "_think_zygote" not in rt.traceback
    assert rt.traceback.count("File") == 2  # the cell, then f
    ex = await sandbox.run_python("import sys\nsys.exit(3)", fresh=True)
    assert ex.error_category == "runtime" and ex.exit_code == 3
    died = await sandbox.run_python("import os\nos.kill(os.getpid(), 9)", fresh=True)
    assert died.error_category == "killed" and "SIGKILL" in died.error
    crash = await sandbox.run_python("import os\nos._exit(5)")
    assert crash.error_category == "killed" and crash.warnings
    assert (await sandbox.run_python("print(1)")).stdout == "1\n"  # a new warm worker
    bash = await sandbox.run_bash("echo out; echo err >&2; exit 4")
    assert bash.exit_code == 4 and bash.error_category == "runtime"
    assert bash.stdout == "out\n" and bash.stderr == "err\n"


async def test_required_tier_refuses_weaker_tiers(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="required_tier"):
        await Sandbox.create(tmp_path, "strict", make_config(Tier.RLIMITS, required_tier=2))


async def test_tools_stream_progress_and_return_outputs(sandbox: Sandbox) -> None:
    from think_kernel.tools.workspace import LocalWorkspace

    events = []
    ctx = ToolContext(
        session_id=sandbox.session_id,
        workspace=LocalWorkspace(str(sandbox.workspace)),
        sandbox=sandbox,
        call_id="c1",
        emit=events.append,
    )
    reg = ToolRegistry(CODE_TOOLS)
    out = await reg.call("execute_code", {"code": "print('hello')\n6 * 7"}, ctx)
    assert out.output.ok and "hello" in out.output.text and "42" in out.output.text
    assert out.output.display == [{"text/plain": "42"}]
    assert out.output.summary.startswith("exit=0, stdout=6 chars")
    assert [(e.stream, e.text) for e in events] == [("stdout", "hello\n")]
    out = await reg.call("bash", {"command": "echo hi; exit 2", "timeout": 5}, ctx)
    assert not out.output.ok and "hi" in out.output.text and "exit code 2" in out.output.text
    out = await reg.call("execute_code", {"code": "while True: pass", "timeout": 0.5}, ctx)
    assert not out.output.ok and "[error: timeout]" in out.output.text
    if sandbox.tier == Tier.RLIMITS:
        assert "NO network or file isolation" in out.output.text


async def test_bash_runs_fork_from_a_server_without_the_preload(sandbox: Sandbox) -> None:
    """Bash comes from the small fork server (a bash child of the preloaded zygote paid for
    numpy, pandas and matplotlib twice: fork and exec); Python runs keep the preload."""
    await sandbox.preload()  # deferred by default: the kernel asks after a first request
    assert "numpy" in await sandbox.wait_preloaded()
    zygote = sandbox.launcher_pid()
    assert zygote is not None and maps_mention(zygote, "numpy")
    bash = await sandbox.run_bash("echo $PPID")
    assert bash.ok, bash
    server = host_pid_of(sandbox.session_id, int(bash.stdout))
    assert server != zygote and parent_of(server) == zygote
    assert not maps_mention(server, "numpy")
    # The zygote starts without site (-S), forks that server, then loads site: its Python
    # runs have site-packages, .pth files applied, and site's builtins.
    py = await sandbox.run_python(
        "import os, sys\n"
        "print(os.getppid(), 'numpy' in sys.modules, any(p.endswith('site-packages') for p in "
        "sys.path), callable(exit))",
        fresh=True,
    )
    assert py.ok, py
    inside_zygote = host_pid_of(sandbox.session_id, int(py.stdout.split()[0]))
    assert (inside_zygote, *py.stdout.split()[1:]) == (zygote, "True", "True", "True"), py
    # Its runs start again and again (a spare is forked for the next one).
    outs = [await sandbox.run_bash(f"echo run{i}") for i in range(3)]
    assert [r.stdout for r in outs] == ["run0\n", "run1\n", "run2\n"]
