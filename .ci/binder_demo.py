"""Run the Binder demo notebooks headlessly against the scripted model (run by ``.ci/run``).

    python .ci/binder_demo.py BINDER_DIR

Run with the python of an environment built from ``binder/`` (requirements.txt, then
postBuild), as repo2docker builds it. ``demo.ipynb`` runs first, with the model given in the
environment, as a Binder user gives it in its first cell; its optional cell saves that model to
``think_kernel_config.py``. ``think-notebook.ipynb`` then runs in a Think kernel started with
no model in its environment, so it can only answer through the saved file. The model is
``tests/fake_model.py``; every other part (kernels, agent, tools, sandbox) is real. Exits
non-zero with what failed.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fake_model import FakeModel  # noqa: E402

KEY = "binder-demo-key"
MODEL = "fake-model"
REPORT = 'import pandas as pd\n\nprint(pd.read_csv("sales.csv").sort_values("revenue"))\n'
PRIMES = (
    "def primes(n):\n"
    "    return [k for k in range(2, n) if all(k % d for d in range(2, int(k**0.5) + 1))]\n\n"
    "print(len(primes(50)), 'primes below 50')\n"
)


def fail(what: str) -> None:
    """Stop with a message."""
    print(f"binder_demo: FAILED: {what}", file=sys.stderr)
    sys.exit(1)


def text_of(cell: Any) -> str:
    """Every text a code cell showed (streams, display data, results, errors)."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            # A stream may come in several outputs that split a line: no separator.
            if parts and parts[-1][0] == "stream":
                parts[-1] = ("stream", parts[-1][1] + out.get("text", ""))
            else:
                parts.append(("stream", out.get("text", "")))
        elif out.get("output_type") == "error":
            parts.append(("error", "\n".join(out.get("traceback", []))))
        for mime in ("text/markdown", "text/plain"):
            if mime in out.get("data", {}):
                parts.append((mime, out["data"][mime]))
    return "\n".join(text for _, text in parts)


def run(path: Path, env: dict[str, str]) -> Any:
    """Execute a notebook in its own folder with the given environment; return it."""
    nb = nbformat.read(path, as_version=4)
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)  # the kernel inherits this process's environment
    try:
        NotebookClient(
            nb,
            timeout=180,
            startup_timeout=120,
            resources={"metadata": {"path": str(path.parent)}},
        ).execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return nb


def demo(binder: Path, fm: FakeModel, env: dict[str, str], config_dir: Path) -> None:
    """demo.ipynb: the magics answer about the user's DataFrame and write a file."""
    fm.reply(
        text="Let me write the script.",
        tool_calls=[
            ("write_file", {"path": "report.py", "content": REPORT}),
            ("list_files", {}),
        ],
    )
    fm.reply(text="**east** has the highest revenue (143). I wrote `report.py`.")
    nb = run(binder / "demo.ipynb", env)
    think = next(c for c in nb.cells if c.cell_type == "code" and "%%think" in c.source)
    answer = text_of(think)
    if "east** has the highest revenue" not in answer:
        fail(f"the %%think cell did not show the answer:\n{answer}")
    report = binder / "report.py"
    if not report.is_file() or report.read_text() != REPORT:
        fail("report.py was not written by the agent's file tool")
    first = str(fm.requests[0]["messages"])
    if "sales" not in first or "DataFrame" not in first:
        fail("the model was not shown a summary of the notebook's variables")
    listed = [m for m in fm.requests[1]["messages"] if m.get("role") == "tool"]
    if not any("report.py" in str(m.get("content")) for m in listed):
        fail("list_files did not list report.py")
    saved = config_dir / "think_kernel_config.py"
    if not saved.is_file() or stat.S_IMODE(saved.stat().st_mode) != 0o600:
        fail("the optional cell did not save think_kernel_config.py readable by the user only")
    print("binder_demo: demo.ipynb ok")


def think_notebook(binder: Path, fm: FakeModel, env: dict[str, str]) -> None:
    """think-notebook.ipynb: a Think kernel with the saved model writes and runs a script in
    its sandbox."""
    fm.reset()
    fm.reply(tool_calls=[("write_file", {"path": "primes.py", "content": PRIMES})])
    fm.reply(tool_calls=[("bash", {"command": "python primes.py"})])
    fm.reply(text="There are **15** primes below 50.")
    nb = run(binder / "think-notebook.ipynb", env)
    code = [c for c in nb.cells if c.cell_type == "code"]
    status, request, bash = (text_of(c) for c in code[:3])
    if "tier" not in status.lower():
        fail(f"%think_status did not name the sandbox tier:\n{status}")
    if "**15** primes" not in request:
        fail(f"the request cell did not show the answer:\n{request}")
    results = [m for m in fm.requests[2]["messages"] if m.get("role") == "tool"]
    if not any("15 primes below 50" in str(m.get("content")) for m in results):
        fail("the sandboxed run's output did not reach the model")
    if "15 primes below 50" not in bash:
        fail(f"the %%bash cell did not run primes.py:\n{bash}")
    auth = {h.get("Authorization") for h in fm.headers}
    if auth != {f"Bearer {KEY}"}:
        fail(f"the Think kernel did not use the saved key: {auth}")
    print("binder_demo: think-notebook.ipynb ok")


def main() -> None:
    """Run both notebooks in order."""
    binder = Path(sys.argv[1]).resolve()
    config_dir = Path(tempfile.mkdtemp(prefix="binder-jupyter-config-"))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "THINK_"))}
    base["JUPYTER_CONFIG_DIR"] = str(config_dir)
    fm = FakeModel().start()
    try:
        given = {**base, "OPENAI_BASE_URL": fm.url, "OPENAI_API_KEY": KEY, "THINK_MODEL": MODEL}
        demo(binder, fm, given, config_dir)
        think_notebook(binder, fm, base)
    finally:
        fm.stop()


if __name__ == "__main__":
    main()
