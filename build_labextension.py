"""The lab-extension step of ``pip install .`` from a source checkout (a hatch-jupyter-builder
build function, named in pyproject.toml).

hatch-jupyter-builder's own ``npm_builder`` runs npm for about a minute with no word of what
it is doing, and without Node.js fails with a bare ``FileNotFoundError``. This one checks for
Node.js >= 20 first and says what to do without it (install Node.js, or install the built
wheel, which needs none), then runs the same two npm steps with a line before and after each.
pip captures a build's output (``pip install -v`` shows it), so the progress lines also go to
the terminal when there is one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

NODE_MIN = 20
HOW_TO = f"""\
Think for Jupyter: building the JupyterLab extension from a source checkout needs Node.js
>= {NODE_MIN} and npm ({{found}}). Either:

  - install Node.js {NODE_MIN} or newer (nodejs.org, conda-forge's `nodejs`, nvm; some
    distributions ship older ones), check `node --version`, and run pip again; or
  - install a built wheel instead (`pip install think_jupyter-*.whl`, or from an index): the
    wheel carries the prebuilt extension and needs no Node.js.
"""


def _say(text: str, tty: Any) -> None:
    line = f"[think-jupyter] {text}"
    print(line, file=sys.stderr, flush=True)
    if tty is not None:
        try:
            tty.write(line + "\n")
            tty.flush()
        except OSError:  # the terminal went away: the captured copy is enough
            pass


def _terminal() -> Any:
    # pip runs the build with its output captured; a person at a terminal still deserves to
    # see that the minute of silence is npm at work.
    if sys.stderr.isatty() or os.environ.get("CI"):
        return None
    try:
        tty = open("/dev/tty", "w")  # noqa: SIM115 (closed by the caller)
        tty.write("\n")  # off pip's spinner line
        return tty
    except OSError:
        return None


def node_problem() -> str | None:
    """What is wrong with the Node.js on PATH for this build, or None when it will do."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing = " and ".join(n for n, p in (("node", node), ("npm", npm)) if p is None)
        return f"no {missing} on PATH"
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"`{node} --version` failed: {e}"
    m = re.match(r"v(\d+)\.", out.stdout.strip())
    if m is None:
        said = (out.stdout + out.stderr).strip()[-300:]
        return f"`{node} --version` exited {out.returncode}: {said!r}"
    if int(m.group(1)) < NODE_MIN:
        return f"found Node.js {out.stdout.strip()} at {node}"
    return None


def _step(number: int, what: str, cmd: list[str], cwd: Path, tty: Any) -> None:
    _say(f"{number}/2 {what}: {' '.join(cmd)} ...", tty)
    start = time.monotonic()
    # npm's own progress bar needs a terminal it does not have here; its log lines go to
    # pip's captured output (shown by `pip install -v` and on failure).
    result = subprocess.run(cmd, cwd=cwd, stdout=sys.stderr, stderr=sys.stderr)
    took = time.monotonic() - start
    if result.returncode != 0:
        _say(f"{number}/2 {what} failed after {took:.0f} s (exit {result.returncode})", tty)
        raise SystemExit(result.returncode)
    _say(f"{number}/2 {what}: done in {took:.0f} s", tty)


def build(
    target_name: str,
    version: str,
    path: str = ".",
    build_cmd: str = "build",
    source_dir: str | None = None,
    build_dir: str | None = None,
    **_: Any,
) -> None:
    """Build the lab extension with npm (``version`` is hatch's ``standard`` or ``editable``)."""
    if os.environ.get("HATCH_JUPYTER_BUILDER_SKIP_NPM") == "1":
        return
    root = Path(path).resolve()
    if source_dir and build_dir:
        from hatch_jupyter_builder.utils import is_stale

        if not is_stale(build_dir, source_dir):
            return
    tty = _terminal()
    try:
        problem = node_problem()
        if problem is not None:
            message = HOW_TO.format(found=problem)
            print(message, file=sys.stderr, flush=True)
            if tty is not None:
                tty.write(message)
            # A clean exit with the message above, not a traceback that buries it.
            raise SystemExit(1)
        npm = shutil.which("npm") or "npm"
        _say(f"building the JupyterLab extension ({target_name}, {version}): about a minute", tty)
        fresh = not (root / "node_modules").is_dir()
        install = [npm, "ci" if fresh else "install", "--no-audit", "--no-fund"]
        _step(1, "installing npm packages", install, root, tty)
        _step(2, "compiling and bundling", [npm, "run", build_cmd], root, tty)
    finally:
        if tty is not None:
            tty.close()
