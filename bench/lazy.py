"""Sandboxes on demand against spares that hold a started, preloaded sandbox
(``c.SandboxConfig.start_with_kernel = True``, the baseline), in the same run, through a real
Jupyter server, kernels and sandboxes with an instant scripted model (tests/fake_model.py).

    python bench/lazy.py [--trials N] [--chats N]

Printed for each mode:

1. first one-``bash`` turn in a new chat, outside the model: the model's first reply (a
   ``bash`` call of ``echo``) is complete -> its second request arrives (jupyter-ai 3.2.0,
   measured side by side earlier: 109 ms)
2. a spare kernel's tree: PSS (``/proc/*/smaps_rollup``) and processes
3. what each idle chat (one plain message answered, its preload done) adds to the server's
   tree: PSS and processes
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from coldpaths import ModelProcess, Server, ensure_bytecode, post_to_model, rss_mb, tree  # noqa: E402
from scale import first_bash, footprint, settle  # noqa: E402

PEER_FIRST_BASH_MS = 109.0
MODES = {"on demand": "", "started with the kernel": "c.SandboxConfig.start_with_kernel = True\n"}
PRELOAD_S = 8.0  # the idle chats' preload (numpy, pandas, matplotlib) ends within this


def spare_tree(srv: Server) -> tuple[float, int]:
    """(PSS in MB, process count) of the spare kernel and everything under it."""
    kernels = srv.call("GET", "api/think/kernels")["kernels"]
    pid = next(k["pid"] for k in kernels if k["session_id"] is None and k.get("prepared"))
    pids = tree(pid)
    return rss_mb(pids), len(pids)


def measure(tmp: Path, fm: ModelProcess, kernel_config: str, trials: int, chats: int) -> dict:
    """Every figure on one server of one mode."""
    srv = Server(tmp, fm.url, 1, kernel_config=kernel_config)
    out: dict[str, Any] = {}
    try:
        srv.wait_up()
        settle(srv, 1)
        time.sleep(PRELOAD_S)  # a spare started with its sandbox preloads it meanwhile
        out["spare_pss_mb"], out["spare_procs"] = spare_tree(srv)
        base_pss, base_procs = footprint(srv)
        for i in range(chats):
            sid = srv.call("POST", "api/think/sessions", {"title": f"idle{i}"})["id"]
            fm.reply(text="hi")
            post_to_model(srv, fm, sid, "hello")
        settle(srv, 1)
        time.sleep(PRELOAD_S)
        pss, procs = footprint(srv)
        out["idle_chat_pss_mb"] = (pss - base_pss) / chats
        out["idle_chat_procs"] = (procs - base_procs) / chats
        out["first_bash_ms"] = first_bash(srv, fm, 1, trials)
    finally:
        srv.stop()
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run both modes and print; returns the figures."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=7)
    ap.add_argument("--chats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2, help="servers per mode, alternated")
    args = ap.parse_args(argv)
    ensure_bytecode()
    fm = ModelProcess().start()
    runs: dict[str, list[dict]] = {m: [] for m in MODES}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):  # alternated: the machine's load hits both alike
                for i, (mode, cfg) in enumerate(MODES.items()):
                    d = Path(tmp) / f"r{r}m{i}"
                    d.mkdir()
                    runs[mode].append(measure(d, fm, cfg, args.trials, args.chats))
    finally:
        fm.stop()
    res = {
        mode: {k: statistics.median(x[k] for x in xs) for k in xs[0]} for mode, xs in runs.items()
    }
    res["peer_first_bash_ms"] = PEER_FIRST_BASH_MS
    print(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
