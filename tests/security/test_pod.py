"""What a Kubernetes user pod gets, checked in a process made like one: a non-root uid with
no capabilities and no cgroup of its own to delegate, ``no_new_privs``, and a container
runtime's default seccomp profile (namespaces, mounts, keyrings and bpf refused, as Docker's
and containerd's defaults do). docs/jupyterhub.md states the result: such a pod gets tier 2,
which contains the files, network, secrets, store and processes of the server, while limits
per session that need a cgroup (memory, process count) are left to the pod's own limits."""

from __future__ import annotations

import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import think_kernel
from tests.security.test_doctor import verdicts
from think_kernel.sandbox import SandboxConfig, launch
from think_kernel.sandbox.inside import _think_seccomp as sc

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

#: jovyan, the user of the Jupyter Docker stacks.
POD_UID = 1000

#: What the runtimes' default profiles refuse that matters here (they refuse more: kernel
#: modules, clocks, reboot; none of it is asked for by Think).
REFUSED = ("unshare", "setns", "mount", "umount2", "pivot_root", "open_tree", "move_mount",
           "fsopen", "fsmount", "bpf", "keyctl", "add_key", "request_key")  # fmt: skip


#: What tier 2 contains in such a pod (the doctor's rows, by their start).
CONTAINED = ("the kernel's Python: write", "network", "host sockets", "files", "secrets",
             "the store", "the history store", "the kernel process", "its own launcher", "disk",
             "a wedged launcher", "output scripting", "planted skill and tool")  # fmt: skip


def runtime_profile() -> bytes:
    """A classic-BPF program like a container runtime's default seccomp profile."""
    arch, nr = sc._ARCHES[platform.machine()]
    prog = [(sc._LD, 0, 0, 4), (sc._JEQ, 1, 0, arch), (sc._RET, 0, 0, sc._KILL),
            (sc._LD, 0, 0, 0)]  # fmt: skip
    for name in REFUSED:
        prog += [(sc._JEQ, 0, 1, nr[name]), (sc._RET, 0, 0, sc._errno(sc.EPERM))]
    prog += sc._block(nr["clone"], [sc._arg(0), (sc._JSET, 0, 1, sc.CLONE_NS_FLAGS),
                                    (sc._RET, 0, 0, sc._errno(sc.EPERM)),
                                    (sc._RET, 0, 0, sc._ALLOW)])  # fmt: skip
    prog += [(sc._JEQ, 0, 1, nr["clone3"]), (sc._RET, 0, 0, sc._errno(sc.ENOSYS)),
             (sc._RET, 0, 0, sc._ALLOW)]  # fmt: skip
    return b"".join(struct.pack("<HBBI", *ins) for ins in prog)


@pytest.fixture
def home() -> Iterator[Path]:
    """The pod user's home (and the doctor's folder), theirs alone."""
    path = Path(tempfile.mkdtemp(prefix="think-pod-"))
    if os.geteuid() == 0:
        os.chown(path, POD_UID, SandboxConfig().sandbox_gid)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_pod_gets_tier_2_and_the_doctor_says_what_it_leaves_to_the_pod(home: Path) -> None:
    root = os.geteuid() == 0
    gid = SandboxConfig().sandbox_gid
    if root:
        # The image's Python is the user's to run, as in a pod: searchable on the way.
        for path in [*launch.python_paths(), str(launch.INSIDE_DIR), *think_kernel.__path__]:
            launch.ensure_search(Path(path), gid)
    profile = runtime_profile()

    def as_pod() -> None:
        if root:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(POD_UID)
        sc.install_seccomp(profile)  # with no_new_privs, as runtimes start containers

    exe = Path(sys.executable).parent / "jupyter-think"
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"}
    proc = subprocess.run([str(exe), "doctor"], capture_output=True, text=True, timeout=240,
                          preexec_fn=as_pod, cwd=home, env=env)  # fmt: skip
    out = proc.stdout
    found = verdicts(out)
    assert list(found) == ["tier 2"], out + proc.stderr
    results = found["tier 2"]
    kept_in = [a for a, contained in results.items() if contained]
    for attack in CONTAINED:
        assert any(a.startswith(attack) for a in kept_in), (attack, results)
    # Without a cgroup to delegate, per-session memory and process limits are the pod's.
    assert "| memory per session | 4096 MiB | not enforced" in out, out
    assert "| session identity | the kernel's uid |" in out, out
    left = sorted(a for a, contained in results.items() if not contained)
    assert left == ["fork bomb: processes of one session", "memory: 4 processes x 64 MiB"], out
    assert proc.returncode == 1 and "NOT all green" in out
