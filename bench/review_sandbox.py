"""What review mode adds to a sandboxed run, beside the same run without it, in one process.

    python bench/review_sandbox.py [--files 1000] [--runs 30]

For each way this machine can build the view (tier 1 overlay, tier 1 copy with a bwrap
without ``--overlay``, tiers 2 and 3 copy), a workspace of ``--files`` small files and a
proposal of one changed file: the median time of ``bash -c true`` and of a warm ``execute_code``
without review mode and with it (the store read, the workspace walk, the view's collect),
and what building the copy of the workspace costs once (``cp -a --reflink=auto``).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from think_kernel.proposals import Proposal
from think_kernel.proposals.sandboxview import ProposalSource
from think_kernel.sandbox import Sandbox, SandboxConfig, Tier, available_tiers
from think_kernel.sandbox.review import ReviewView
from think_kernel.sandbox.reviewruns import review_folder
from think_kernel.sandbox.tiers import overlay_bwrap
from think_kernel.store import Store


def make_workspace(n: int) -> Path:
    """``n`` small files in folders of 50, and the helper the proposal changes."""
    ws = Path(tempfile.mkdtemp(prefix="think-bench-review-"))
    for i in range(n):
        d = ws / f"pkg{i // 50}"
        d.mkdir(exist_ok=True)
        (d / f"m{i}.py").write_text(f"X = {i}\n" * 20)
    (ws / "helper.py").write_text("def answer():\n    return 1\n")
    return ws


async def median_ms(sb: Sandbox, runs: int, python: bool) -> float:
    """Median wall time of one run, after two to warm up."""
    times = []
    for i in range(runs + 2):
        t = time.perf_counter()
        res = await (sb.run_python("1") if python else sb.run_bash("true"))
        if not res.ok:
            raise SystemExit(f"run failed: {res.error} {res.stderr}")
        if i >= 2:
            times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


async def way(tier: Tier, bwrap: str, ws: Path, store: Store, runs: int) -> dict:
    """Median runs without and with review mode on one tier (the same workspace)."""
    cfg = SandboxConfig(force_tier=int(tier), bwrap_path=bwrap, preload_modules=[])
    out: dict = {}
    async with await Sandbox.create(ws, f"bench-plain-{int(tier)}", cfg) as plain:
        out["bash"] = await median_ms(plain, runs, False)
        out["python"] = await median_ms(plain, runs, True)
    sid = f"bench-review-{int(tier)}"
    await store.create_session(id=sid, title="bench", options={"review": True})
    runtime = SimpleNamespace(store=store, session_id=sid, config=SimpleNamespace(review_mode=True))
    await Proposal.of(runtime).write("helper.py", b"def answer():\n    return 2\n", b"")
    async with await Sandbox.create(ws, sid, cfg) as sb:
        sb.review_source = ProposalSource(runtime)
        out["review_bash"] = await median_ms(sb, runs, False)
        out["review_python"] = await median_ms(sb, runs, True)
        out["mode"] = sb.review_mode
    return out


def copy_cost(ws: Path) -> float:
    """Milliseconds to build a copy view of ``ws`` (copy, attributes, first scan)."""
    dest = Path(tempfile.mkdtemp(prefix="think-bench-copy-")) / "view"
    try:
        t = time.perf_counter()
        view = ReviewView(ws, "copy", dest)
        view.prepare()
        view.close()
        return (time.perf_counter() - t) * 1000
    finally:
        shutil.rmtree(dest.parent, ignore_errors=True)


async def main() -> None:
    """Run every way and print one table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    tiers = available_tiers()
    ways: list[tuple[str, Tier, str]] = []
    probe = review_folder("").parent
    if Tier.BUBBLEWRAP in tiers:
        if overlay_bwrap("", probe):
            ways.append(("tier 1 overlay", Tier.BUBBLEWRAP, ""))
        plain = shutil.which("bwrap")
        if plain and not overlay_bwrap(plain, probe):
            ways.append(("tier 1 copy", Tier.BUBBLEWRAP, plain))
    ways += [(f"tier {int(t)} copy", t, "") for t in (Tier.LANDLOCK, Tier.RLIMITS) if t in tiers]
    store_dir = Path(tempfile.mkdtemp(prefix="think-bench-store-"))
    store = await Store.open(store_dir / "think.db")
    print(f"workspace: {args.files} files; median of {args.runs} runs (ms)")
    print(f"{'way':16} {'bash':>7} {'+review':>8} {'added':>7} {'python':>7} {'+review':>8} "
          f"{'added':>7}")  # fmt: skip
    try:
        for files in sorted({10, args.files}):
            ws = make_workspace(files)
            try:
                print(f"-- {files} files")
                for name, tier, bwrap in ways:
                    r = await way(tier, bwrap, ws, store, args.runs)
                    print(f"{name:16} {r['bash']:7.1f} {r['review_bash']:8.1f} "
                          f"{r['review_bash'] - r['bash']:7.1f} {r['python']:7.1f} "
                          f"{r['review_python']:8.1f} "
                          f"{r['review_python'] - r['python']:7.1f}")  # fmt: skip
                    await store.delete_session(f"bench-review-{int(tier)}")
                print(f"copy view of {files} files built in {copy_cost(ws):.0f} ms")
            finally:
                shutil.rmtree(ws, ignore_errors=True)
    finally:
        await store.close()
        shutil.rmtree(store_dir, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
