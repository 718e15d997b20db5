"""What the link-safe write path costs, against the plain write it replaced.

    python bench/writes.py [--quick]

Same run, same files, medians of many writes (µs):

- ``plain``: the old way (``tools/workspace.py`` and ``collab/local.py`` before the link-safe path):
  ``mkdir(parents=True)``, ``.NAME.think-tmp`` written by path, ``os.replace``, everything
  following links.
- ``safe (openat2)``: :meth:`think_kernel.safefs.SafeRoot.write_bytes`: the folder opened
  with one ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)``, a random ``O_EXCL`` temp file,
  ``fsync``, ``renameat``.
- ``safe (O_NOFOLLOW walk)``: the same where the kernel has no openat2 (one ``openat`` per
  folder).
- ``plain + fsync``: the old way with the ``fsync`` the standalone documents already did, to
  separate the cost of durability from the cost of safety.
- ``tool`` / ``old tool``: the whole ``write_file`` tool call on a LocalWorkspace (path checks,
  the UTF-8 check of the file it replaces, the safe write), as the model's call runs; and the
  same call with the old ``write_text`` (resolve, then the plain write).

For each: a 1 KiB file at the root, one 5 folders deep, and a 1 MiB file.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from think_kernel.safefs import HAVE_OPENAT2, SafeRoot  # noqa: E402
from think_kernel.tools.base import ToolContext, ToolRegistry  # noqa: E402
from think_kernel.tools.files import FILE_TOOLS  # noqa: E402
from think_kernel.tools.workspace import LocalWorkspace  # noqa: E402


def plain(root: Path, rel: str, data: bytes, fsync: bool = False) -> None:
    """The write before the link-safe path."""
    full = root / rel
    full.parent.mkdir(parents=True, exist_ok=True)
    tmp = full.with_name(f".{full.name}.think-tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        if fsync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, full)


class OldWorkspace(LocalWorkspace):
    """``write_text`` as it was before the link-safe path (the tool's other checks unchanged)."""

    async def write_text(self, path: str, content: str) -> None:
        full = self.resolve(path)
        await asyncio.to_thread(plain, self.root, self.relative(full), content.encode())


def median_us(fn: Callable[[], object], n: int) -> float:
    for _ in range(max(n // 10, 3)):  # warm the page cache and the dentries
        fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    n = 200 if args.quick else 1000
    tmp = Path(tempfile.mkdtemp(prefix="think-bench-writes-"))
    try:
        root = tmp / "ws"
        root.mkdir()
        fs = SafeRoot(root)
        walk = SafeRoot(root, use_openat2=False)
        ws = LocalWorkspace(root)
        registry = ToolRegistry(FILE_TOOLS, core=True)
        ctx = ToolContext(session_id="bench", workspace=ws)
        old_ctx = ToolContext(session_id="bench", workspace=OldWorkspace(root))
        loop = asyncio.new_event_loop()
        cases = [
            ("1 KiB at the root", "a.txt", b"x" * 1023 + b"\n"),
            ("1 KiB, 5 folders deep", "a/b/c/d/e/a.txt", b"x" * 1023 + b"\n"),
            ("1 MiB at the root", "big.txt", (b"y" * 1023 + b"\n") * 1024),
        ]
        print(f"openat2 available: {HAVE_OPENAT2}; medians of {n} writes, in µs")
        print(f"{'case':24} {'plain':>8} {'+fsync':>8} {'safe':>8} {'walk':>8} {'old tool':>9}"
              f" {'tool':>8}  safe/(plain+fsync)  tool/old tool")  # fmt: skip
        for label, rel, data in cases:
            text = data.decode()
            ctx.read_paths.add(rel)
            old_ctx.read_paths.add(rel)

            def tool_call(rel: str = rel, text: str = text, c: ToolContext = ctx) -> object:
                return loop.run_until_complete(
                    registry.call("write_file", {"path": rel, "content": text}, c)
                )

            reps = n if len(data) < 1 << 20 else max(n // 10, 20)
            t_plain = median_us(lambda rel=rel, data=data: plain(root, rel, data), reps)
            t_fsync = median_us(lambda rel=rel, data=data: plain(root, rel, data, True), reps)
            t_safe = median_us(lambda rel=rel, data=data: fs.write_bytes(rel, data), reps)
            t_walk = median_us(lambda rel=rel, data=data: walk.write_bytes(rel, data), reps)
            t_old = median_us(lambda rel=rel, text=text: tool_call(rel, text, old_ctx), reps)
            t_tool = median_us(tool_call, reps)
            print(f"{label:24} {t_plain:8.0f} {t_fsync:8.0f} {t_safe:8.0f} {t_walk:8.0f} "
                  f"{t_old:9.0f} {t_tool:8.0f}  {t_safe / t_fsync:17.2f}x  "
                  f"{t_tool / t_old:12.2f}x")  # fmt: skip
        loop.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
