"""A think kernel's channels are Unix sockets, not localhost TCP ports
(think_kernel/kernel/provisioner.py). jupyter_client picks TCP ports by binding port 0 and
letting go; the kernel binds them later, and whatever took one meanwhile (a browser's
connection, a sandbox's web proxy) made the kernel fail with "Address already in use" on
every restart, since restarts reuse the ports. Here a port is taken on purpose and handed
out as the race would: the think kernel starts anyway, restarts, and leaves no socket file."""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path

import pytest
from jupyter_client import KernelManager
from jupyter_client.localinterfaces import localhost
from jupyter_client.provisioning.local_provisioner import LocalPortCache
from jupyter_core.paths import jupyter_runtime_dir

from tests.fake_model import FakeModel
from tests.kernel.conftest import kernel_env, start_kernel, workspace_in
from think_kernel.kernel.provisioner import use_socket_files

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture
def a_taken_port(monkeypatch: pytest.MonkeyPatch):
    """A port something else listens on, which jupyter_client's port cache hands out."""
    holder = socket.socket()
    holder.bind((localhost(), 0))
    holder.listen()
    port = holder.getsockname()[1]
    monkeypatch.setattr(LocalPortCache, "find_available_port", lambda self, ip: port)
    yield port
    holder.close()


def test_a_think_kernel_starts_and_restarts_while_its_ports_would_be_taken(
    tmp_path: Path, model: FakeModel, a_taken_port: int
) -> None:
    kernel = start_kernel(workspace_in(tmp_path), kernel_env(tmp_path, model))
    km = kernel.km
    try:
        info = json.loads(Path(km.connection_file).read_text())
        assert info["transport"] == "ipc" and a_taken_port not in info.values(), info
        sockets = [f"{km.ip}-{km.shell_port}", f"{km.ip}-{km.control_port}"]
        for path in sockets:
            assert stat.S_ISSOCK(os.stat(path).st_mode), path
        # Only the owner reaches them: the folder they are in is private.
        assert os.stat(os.path.dirname(km.ip)).st_mode & 0o077 == 0
        model.reply(text="over a socket file")
        reply, outputs = kernel.execute("hello", timeout=60)
        assert reply["status"] == "ok" and "over a socket file" in str(outputs), outputs

        km.restart_kernel(now=True, newports=True)
        kernel.kc.wait_for_ready(timeout=60)
        reply, _ = kernel.execute("%think_status", timeout=60)
        assert reply["status"] == "ok"
    finally:
        kernel.stop()
    assert not [p for p in sockets if os.path.exists(p)], "socket files left behind"


def test_a_python_kernel_is_left_on_tcp(tmp_path: Path) -> None:
    """Only the think kernelspec's provisioner does this: other kernels are as configured."""
    kernel = start_kernel(workspace_in(tmp_path), kernel_env(tmp_path, None), name="python3")
    try:
        assert kernel.km.transport == "tcp"
    finally:
        kernel.stop()


def test_where_socket_files_cannot_be_made_the_kernel_stays_on_tcp() -> None:
    """A runtime folder whose file system refuses Unix sockets (here /proc, where nothing
    can be created, even by root): the channels stay on TCP rather than fail to bind."""
    km = KernelManager(kernel_name="think", connection_file="/proc/kernel-x.json")
    assert not use_socket_files(km)
    assert km.transport == "tcp"
    os.makedirs(jupyter_runtime_dir(), exist_ok=True)  # as the server's kernel manager does
    ok = KernelManager(kernel_name="think", connection_file=f"{jupyter_runtime_dir()}/k.json")
    assert use_socket_files(ok) and ok.transport == "ipc"
    assert not os.path.exists(f"{ok.ip}-probe")  # the probe leaves nothing behind


def test_a_runtime_folder_too_deep_for_a_socket_uses_a_short_private_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection file whose folder is too deep for a socket's path (a long home or data
    path, or a test's tmp folder): the sockets go to ``<temp>/think-ipc-<uid>`` (0700, ours),
    not back to TCP ports and their race; a folder by that name someone else could enter
    is not used."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True, mode=0o700)
    km = KernelManager(kernel_name="think", connection_file=str(deep / "kernel-abc.json"))
    assert use_socket_files(km) and km.transport == "ipc", km.ip
    folder = os.path.dirname(km.ip)
    assert os.path.basename(km.ip) == "kernel-abc-ipc"
    assert len(os.fsencode(km.ip)) <= 100 and not folder.startswith(str(tmp_path))
    st = os.lstat(folder)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and st.st_mode & 0o077 == 0

    # A planted stand-in (another user's, or open to others) is refused: TCP then.
    import think_kernel.kernel.provisioner as provisioner

    planted = tmp_path / "planted"
    planted.mkdir(mode=0o777)
    planted.chmod(0o777)
    monkeypatch.setattr(provisioner.tempfile, "gettempdir", lambda: str(planted))
    (planted / f"think-ipc-{os.getuid()}").mkdir(mode=0o755)
    (planted / f"think-ipc-{os.getuid()}").chmod(0o755)
    other = KernelManager(kernel_name="think", connection_file=str(deep / "kernel-x.json"))
    assert not use_socket_files(other) and other.transport == "tcp"
