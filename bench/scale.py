"""Many chats, little memory: what each chat adds, idle and hibernated, through a real
Jupyter server, kernels and sandboxes, with an instant scripted model (tests/fake_model.py).

    python bench/scale.py [--chats N [N ...]] [--sessions-per-kernel K] [--hibernate S]

Each chat count runs twice: a kernel per chat (``sessions_per_kernel = 1``) and chats sharing
host kernels (``sessions_per_kernel = K``). Printed, each next to the same run's baseline
(the server with its spare pool, no chats) and the peer's figures (jupyter-ai 3.2.0,
measured side by side earlier):

1. first one-``bash`` turn in a new chat, outside the model (the sandbox starts at the
   chat's first bash call, not in the spare nor at its first message)
2. tree PSS (``/proc/*/smaps_rollup``) and process count the server's tree gains per chat,
   for N chats that each answered one plain message, idle; then after they hibernated
3. back-to-back new chats: POST of the first message -> the request at the model, each chat
   created right after the previous one answered
4. wake-up: POST to a hibernated chat -> the request at the model, a spare ready
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

from coldpaths import (  # noqa: E402
    ModelProcess,
    Server,
    ensure_bytecode,
    post_to_model,
    rss_mb,
    spares,
    tree,
    wait_for,
    wait_idle,
)

PEER = {"pss_per_chat_mb": 3.0, "procs_per_chat": 0, "back_to_back_ms": 170.0}


def footprint(srv: Server) -> tuple[float, int]:
    """(PSS in MB, process count) of the server and every process under it."""
    pids = tree(srv.proc.pid)
    return rss_mb(pids), len(pids)


def kernels_only(srv: Server) -> float:
    """PSS in MB of the server and its kernels, the sandboxes under them left out: what a
    chat costs beside its sandbox (its runtime, and its share of a kernel)."""
    kids = [p for p in tree(srv.proc.pid) if _parent(p) == srv.proc.pid]
    return rss_mb([srv.proc.pid, *kids])


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def settle(srv: Server, pool: int) -> None:
    """Wait until the pool's spares are ready and quiet."""
    if pool:
        wait_for(lambda: spares(srv) >= pool, 120)
    time.sleep(2.0)  # their first imports fault pages in; measure after that


def first_bash(srv: Server, fm: ModelProcess, pool: int, trials: int) -> float:
    """Median ms from the model's bash call to its next request, in new chats."""
    out = []
    for _ in range(trials):
        settle(srv, pool)
        sid = srv.call("POST", "api/think/sessions", {"title": "bash"})["id"]
        fm.reply(tool_calls=[("bash", {"command": "echo hi"})])
        fm.reply(text="done")
        n, ends = len(fm.arrived), len(fm.ended)
        srv.call("POST", f"api/think/sessions/{sid}/messages", {"content": "run"})
        fm.wait("arrived", n + 2, 60)
        out.append((fm.arrived[n + 1] - fm.ended[ends]) * 1000)
        wait_idle(srv, sid)
    return statistics.median(out)


def run(
    chats: int, hibernate: float, pool: int, trials: int, tmp: Path, per_kernel: int = 1
) -> dict[str, Any]:
    """Every measure on one server."""
    fm = ModelProcess().start()
    config = tmp / "config"
    config.mkdir()
    (config / "jupyter_server_config.py").write_text(
        f"c.ThinkExtension.hibernate_after = {hibernate}\n"
        f"c.ThinkExtension.sessions_per_kernel = {per_kernel}\n"
    )
    srv = Server(tmp, fm.url, pool)
    out: dict[str, Any] = {"chats": chats, "pool": pool, "hibernate_after": hibernate}
    out["sessions_per_kernel"] = per_kernel
    try:
        srv.wait_up()
        settle(srv, pool)
        base_pss, base_procs = footprint(srv)
        base_kernels = kernels_only(srv)
        out["baseline_pss_mb"], out["baseline_procs"] = base_pss, base_procs
        sids, back_to_back = [], []
        for i in range(chats):
            sid = srv.call("POST", "api/think/sessions", {"title": f"c{i}"})["id"]
            sids.append(sid)
            fm.reply(text="hi")
            back_to_back.append(post_to_model(srv, fm, sid, "hello"))
        out["back_to_back_ms"] = statistics.median(back_to_back)
        out["back_to_back_max_ms"] = max(back_to_back)
        settle(srv, pool)
        pss, procs = footprint(srv)
        out["idle_pss_per_chat_mb"] = (pss - base_pss) / chats
        out["idle_procs_per_chat"] = (procs - base_procs) / chats
        out["idle_kernel_pss_per_chat_mb"] = (kernels_only(srv) - base_kernels) / chats
        listed = lambda: srv.call("GET", "api/think/sessions")["sessions"]  # noqa: E731
        wait_for(lambda: all(s.get("hibernating") for s in listed()), hibernate * 4 + 120)
        settle(srv, pool)
        pss, procs = footprint(srv)
        out["hibernated_pss_per_chat_mb"] = (pss - base_pss) / chats
        out["hibernated_procs_per_chat"] = (procs - base_procs) / chats
        wakes = []
        for sid in sids[:trials]:
            settle(srv, pool)
            fm.reply(text="awake")
            wakes.append(post_to_model(srv, fm, sid, "wake up"))
        out["wake_ms"] = statistics.median(wakes)
        out["first_bash_ms"] = first_bash(srv, fm, pool, trials) if trials else float("nan")
    finally:
        srv.stop()
        fm.stop()
    return out


def table(res: dict[str, Any]) -> None:
    """Print one run's figures beside jupyter-ai's."""
    rows = [
        ("PSS added per idle chat", f"{res['idle_pss_per_chat_mb']:.1f} MB",
         f"{PEER['pss_per_chat_mb']:.0f} MB"),
        ("processes added per idle chat", f"{res['idle_procs_per_chat']:.1f}",
         str(PEER["procs_per_chat"])),
        ("  of which outside its sandbox (PSS)", f"{res['idle_kernel_pss_per_chat_mb']:.1f} MB",
         f"{PEER['pss_per_chat_mb']:.0f} MB"),
        ("PSS added per hibernated chat", f"{res['hibernated_pss_per_chat_mb']:.1f} MB",
         f"{PEER['pss_per_chat_mb']:.0f} MB"),
        ("processes added per hibernated chat", f"{res['hibernated_procs_per_chat']:.1f}",
         str(PEER["procs_per_chat"])),
        ("back-to-back new chat, median (max)",
         f"{res['back_to_back_ms']:.0f} ({res['back_to_back_max_ms']:.0f}) ms",
         f"{PEER['back_to_back_ms']:.0f} ms"),
        ("wake-up of a hibernated chat", f"{res['wake_ms']:.0f} ms", "(none: no kernel)"),
        ("first one-bash turn", f"{res['first_bash_ms']:.0f} ms", "109 ms (unsandboxed)"),
    ]  # fmt: skip
    print(f"\n{res['chats']} chats, {res['sessions_per_kernel']} per kernel; baseline (server + "
          f"{res['pool']} spare, no chats): {res['baseline_pss_mb']:.0f} MB, "
          f"{res['baseline_procs']} processes")  # fmt: skip
    print(f"{'measure':40} {'Think':>22} {'jupyter-ai':>22}")
    for name, ours, peer in rows:
        print(f"{name:40} {ours:>22} {peer:>22}")


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run and print; returns the figures of every run."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--chats", type=int, nargs="+", default=[10, 50])
    # Longer than the back-to-back chats take: the idle figures are measured before any
    # of them hibernates.
    ap.add_argument("--hibernate", type=float, default=40.0)
    ap.add_argument("--pool", type=int, default=1)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument(
        "--sessions-per-kernel", type=int, default=10,
        help="chats per host kernel in the shared runs (each count also runs at 1)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    ensure_bytecode()
    results = []
    for chats in args.chats:
        for per_kernel in sorted({1, args.sessions_per_kernel}):
            # A hibernation wait that outlasts the back-to-back chats (a second each at most).
            hibernate = max(args.hibernate, chats * 1.5)
            with tempfile.TemporaryDirectory() as tmp:
                res = run(chats, hibernate, args.pool, args.trials, Path(tmp), per_kernel)
            print(json.dumps(res, indent=1), flush=True)
            results.append(res)
    for res in results:
        table(res)
    return results


if __name__ == "__main__":
    main()
