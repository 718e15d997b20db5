"""Attack class: steal the API key saved from the setup card.

The key lives in the store (``settings`` table), outside the workspace. On every tier,
sandboxed code looks for it wherever it can read: its environment, every process's
environment and command line, the store, the Jupyter data folder, $HOME, /tmp and the
workspace. It must find it nowhere, while the kernel that holds it still uses it.
"""

from __future__ import annotations

import json
import secrets
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from traitlets.config import Config

from think_kernel.config import ThinkConfig
from think_kernel.endpoint import SETTING
from think_kernel.runtime import Runtime
from think_kernel.sandbox import Tier
from think_kernel.store import location

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow

# Made anew each run: no file on disk holds it but what the test writes (a copy of this file,
# e.g. another checkout under /tmp, is readable on tier 3, which has no filesystem isolation).
KEY = "sk-saved-from-the-card-" + secrets.token_hex(8)


@pytest.fixture
async def runtime(tier: Tier, workspace: Path) -> AsyncIterator[Runtime]:
    """A session on ``workspace`` whose sandbox runs on ``tier``, with a saved key."""
    cfg = Config()
    cfg.SandboxConfig.force_tier = int(tier)
    cfg.SandboxConfig.timeout = 60
    rt = Runtime(ThinkConfig(config=cfg), workspace, extensions=[])
    await rt.start()
    assert rt.store is not None
    await rt.store.set_setting(
        SETTING, {"base_url": "http://127.0.0.1:9/v1", "api_key": KEY, "model": "m"}
    )
    try:
        yield rt
    finally:
        await rt.store.set_setting(SETTING, None)
        await rt.close()


async def test_sandboxed_code_cannot_find_the_saved_key(runtime: Runtime, workspace: Path) -> None:
    # The key is really there, and the runtime resolves it (the model client would send it).
    ep = await runtime.refresh_endpoint()
    assert ep.api_key == KEY and ep.source == "saved"
    raw = b"".join(p.read_bytes() for p in runtime.store_dir.glob("think.db*") if p.is_file())
    assert KEY.encode() in raw, "the test would prove nothing: the key is not in the store"
    (workspace / "notes.txt").write_text("a file the search can read\n")
    sandbox = await runtime.ensure_sandbox()
    places = [str(location.data_dir()), str(runtime.store_dir), str(Path.home()), "/tmp", "."]
    code = textwrap.dedent(f"""
        import glob, json, os, stat
        KEY = {KEY!r}.encode()
        found, read = [], 0
        if KEY in repr(dict(os.environ)).encode():
            found.append("environ")
        for f in glob.glob("/proc/*/environ") + glob.glob("/proc/*/cmdline"):
            try:
                if KEY in open(f, "rb").read():
                    found.append(f)
            except OSError:
                pass
        for top in {places!r}:
            for folder, dirs, files in os.walk(top):
                if folder.startswith("/proc"):
                    continue
                for name in files:
                    path = os.path.join(folder, name)
                    try:
                        if not stat.S_ISREG(os.stat(path).st_mode):
                            continue  # a FIFO someone left in /tmp would block the read
                        with open(path, "rb") as fh:
                            data = fh.read(4_000_000)
                    except OSError:
                        continue
                    read += 1
                    if KEY in data:
                        found.append(path)
                    if read > 20000:
                        break
                if read > 20000:  # a bounded search: a busy /tmp must not make it time out
                    break
        print(json.dumps({{"found": found, "read": read}}))
    """)
    res = await sandbox.run_python(code, fresh=True)
    assert res.ok, res.error
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["found"] == [], out
    assert out["read"] > 0  # the search itself ran (it read the files it could)
