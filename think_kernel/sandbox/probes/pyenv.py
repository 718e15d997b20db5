"""Probes of the Python environment sandboxed code runs: the kernel's interpreter and
packages must work there, and must not be writable from there."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import sys
from collections.abc import Sequence

from .. import envpaths, launch
from ..sandbox import Sandbox
from .report import Probe

ENV_PACKAGES = ("numpy", "pandas", "matplotlib")


async def python_env(sb: Sandbox, packages: Sequence[str] = ENV_PACKAGES) -> Probe:
    """Sandboxed code runs the kernel's Python: its standard library and those of
    ``packages`` the kernel's environment has import, and ``python`` in bash is the kernel's."""
    attack = "the Python environment: stdlib, packages, `python` in bash"
    have = [p for p in packages if importlib.util.find_spec(p) is not None]
    missing = [p for p in packages if p not in have]
    mods = ", ".join(["importlib", "warnings", "threading", *have])
    res = await sb.run_python(f"import sys, {mods}\nprint(sys.prefix)", fresh=True)
    pybin, name = _python_in_bash()
    bash = await sb.run_bash(f"command -v {name} && {name} -c 'import sys; print(sys.prefix)'")
    problems = []
    if not res.ok or res.stdout.strip() != sys.prefix:
        said = (res.error or res.stderr or res.stdout or "no output").strip().splitlines()
        problems.append(f"sandboxed Python fails: {said[-1]}")
    if bash.stdout.split() != [os.path.join(pybin, name), sys.prefix]:
        got = (bash.stdout + bash.stderr).strip().replace("\n", " ") or "not found"
        problems.append(f"`{name}` in sandboxed bash is not the kernel's ({got})")
    if problems:
        return Probe(attack, False, "; ".join(problems) + ". " + _env_fix(sb))
    note = f"; not installed in the kernel's environment: {', '.join(missing)}" if missing else ""
    return Probe(attack, True, f"{mods} import; `{name}` in bash is {pybin}/{name}{note}")


async def python_env_writes(sb: Sandbox) -> Probe:
    """Sandboxed code cannot write the kernel's Python (prefixes, standard library,
    site-packages): what it put there would run in the kernel next."""
    name = f".think-doctor-write-{os.getpid()}"
    targets = [os.path.join(d, name) for d in envpaths.core_paths()]
    each = " ".join(f"'{t}'" for t in targets)
    await sb.run_bash(f'for t in {each}; do echo x > "$t"; done 2>/dev/null; true')
    wrote = await asyncio.to_thread(_remove_written, targets)
    ok = not wrote
    return Probe("the kernel's Python: write into it", ok,
                 "refused: read-only" if ok else "wrote " + ", ".join(wrote))  # fmt: skip


def _remove_written(targets: list[str]) -> list[str]:
    """Those of ``targets`` that exist, removed."""
    found = []
    for t in targets:
        if os.path.lexists(t):
            found.append(t)
            with contextlib.suppress(OSError):
                os.unlink(t)
    return found


def _python_in_bash() -> tuple[str, str]:
    """The kernel's bin folder, which sandboxed bash's PATH starts with, and the name there
    (``python``, else ``python3``) that must run the kernel's interpreter."""
    pybin = os.path.dirname(sys.executable)
    return pybin, "python" if os.path.exists(os.path.join(pybin, "python")) else "python3"


def _env_fix(sb: Sandbox) -> str:
    why = launch.unreachable_env(sb.config.sandbox_gid) if sb.identity is not None else ""
    if why:
        return why[0].upper() + why[1:]
    return (f"Fix: make {sys.executable}, its standard library and site-packages readable by "
            "the sandbox's uid (every folder on the way traversable)")  # fmt: skip
