"""Where the kernel's Python environment lives on disk, so sandboxed code can run it::

    core_paths()    # interpreter, standard library, site-packages: read-only in the sandbox
    added_paths()   # folders .pth files and editable installs add (a project's source)
    env_paths()     # both, without nested duplicates

The sandbox exposes these at their own paths on every tier, wherever they live: a venv whose
``bin/python`` links into a pyenv under a 0700 home, a conda prefix, a system Python.
"""

from __future__ import annotations

import ast
import functools
import os
import site
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path


@functools.cache
def _site_dirs() -> list[str]:
    dirs = list(site.getsitepackages())
    for key in ("purelib", "platlib"):
        dirs.append(sysconfig.get_paths()[key])
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


def core_paths() -> list[str]:
    """The interpreter's prefixes, the real location of its executable, its standard library
    and site-packages (each also by its real path when a link leads there)."""
    return list(_core_paths())


@functools.cache
def _core_paths() -> tuple[str, ...]:
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    paths.append(str(Path(sys.executable).resolve().parent.parent))
    cfg = sysconfig.get_paths()
    paths += [cfg["stdlib"], cfg["platstdlib"], *_site_dirs()]
    return tuple(_existing(paths))


def _pth_lines(sitedir: str) -> list[str]:
    """Folders the ``.pth`` files of ``sitedir`` add to ``sys.path`` (as ``site`` reads them:
    comments and ``import`` lines are not paths)."""
    found = []
    try:
        names = sorted(n for n in os.listdir(sitedir) if n.endswith(".pth"))
    except OSError:
        return []
    for name in names:
        try:
            with open(os.path.join(sitedir, name), encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.rstrip()
            if not line or line.startswith(("#", "import ", "import\t")):
                continue
            found.append(os.path.join(sitedir, line))
    return found


def _editable_mappings(sitedir: str) -> list[str]:
    """Source folders of setuptools' editable installs (``__editable___*_finder.py``: a
    ``MAPPING`` from package name to its folder, which no ``.pth`` line names)."""
    found: list[str] = []
    try:
        names = [n for n in os.listdir(sitedir)
                 if n.startswith("__editable__") and n.endswith("_finder.py")]  # fmt: skip
    except OSError:
        return []
    for name in names:
        try:
            with open(os.path.join(sitedir, name), encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            targets: list[ast.expr]
            if isinstance(node, ast.AnnAssign):
                targets, value = [node.target], node.value
            elif isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            else:
                continue
            if value is None or not any(getattr(t, "id", "") == "MAPPING" for t in targets):
                continue
            try:
                mapping = ast.literal_eval(value)
            except ValueError:
                continue
            if isinstance(mapping, dict):
                found += [str(v) for v in mapping.values() if isinstance(v, str)]
    return found


def added_paths() -> list[str]:
    """Folders the environment's ``.pth`` files and editable installs put on ``sys.path``
    (read again when a site-packages folder changed: an editable install since the last
    sandbox started)."""
    stamps = []
    for d in _site_dirs():
        try:
            stamps.append((d, os.stat(d).st_mtime_ns))
        except OSError:
            continue
    return list(_added_paths(tuple(stamps)))


@functools.lru_cache(maxsize=4)
def _added_paths(stamps: tuple[tuple[str, int], ...]) -> tuple[str, ...]:
    found: list[str] = []
    for d, _mtime in stamps:
        found += _pth_lines(d) + _editable_mappings(d)
    return tuple(_existing(found))


def env_paths() -> list[str]:
    """Every folder sandboxed Python needs to read, outermost only."""
    return outermost([*core_paths(), *added_paths()])


def _existing(paths: Iterable[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if not p:
            continue
        for q in (os.path.abspath(p), os.path.realpath(p)):
            if os.path.exists(q) and q not in out:
                out.append(q)
    return out


def outermost(paths: Iterable[str]) -> list[str]:
    """``paths`` sorted, without those inside another one of them."""
    out: list[str] = []
    for p in sorted(set(paths)):
        if not any(p == o or p.startswith(o.rstrip("/") + "/") for o in out):
            out.append(p)
    return out
