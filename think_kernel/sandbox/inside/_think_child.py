"""What a forked child of the zygote does: take the session's identity, confine itself, then
run one Python snippet, exec bash, or serve cells as the session's warm worker (stdlib only).
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import signal
import socket
import sys

import _think_confine as confine
from _think_seccomp import install_seccomp
from _think_wire import recv_line, send_msg

TYPE_CHECKING = False  # without importing typing: the bash fork server stays small
if TYPE_CHECKING:
    from _think_runner import Runner

LOOPBACK_FD = 3
CHANNEL_FD = 4
#: An app's listening socket (``serve_app``): made and bound by the kernel, since sandboxed
#: code may not call socket() or bind() on tiers 1 and 2; the app only accepts on it.
APP_FD = 5

#: What a primed bash run runs: it waits for ``<byte count>\n<command>`` on the
#: channel (a socket only the kernel holds, which no other process can open through
#: /proc), says it took it, closes the channel and runs the command. ``read -N`` counts
#: bytes under LC_ALL=C; a command cut short (the kernel went away mid-send) fails the read:
#: nothing runs (exit 111). The kernel knows from the "took" line whether a primed bash that
#: died (killed by other code of the session) had begun its command.
PRIMED_BASH = (
    f'IFS= read -r n <&{CHANNEL_FD} && LC_ALL=C IFS= read -r -N "$n" c <&{CHANNEL_FD} '
    f"&& printf '%s\\n' '{{\"ev\": \"took\"}}' >&{CHANNEL_FD} && exec {CHANNEL_FD}<&- "
    '&& unset n || exit 111; eval "unset c; $c"'
)


def has_children() -> bool:
    """True if we have any child at all, running or exited (ECHILD means none)."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def kill_descendants() -> None:
    """SIGKILL everything a cell left behind, and reap it.

    The warm worker is a child subreaper, so every descendant either is our child or has an
    ancestor that is: with no children at all (one waitid call, the common case) there is
    nothing to do. Otherwise kill our process group and our children, repeatedly, since a
    killed process hands its own children to us and a member may fork while we scan /proc.
    """
    me, pgid = os.getpid(), os.getpgrp()
    for _ in range(50):
        reap_all()
        if not has_children():
            return
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
                fields = stat[stat.rindex(b")") + 2 :].split()
                if fields[0] != b"Z" and (int(fields[1]) == me or int(fields[2]) == pgid):
                    os.kill(int(name), signal.SIGKILL)
            except (OSError, ValueError):
                continue


def reap_all() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _std_streams() -> None:
    sys.stdout = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="replace", line_buffering=True
    )
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="replace", line_buffering=True
    )


def detach() -> None:
    """First steps of every forked child: own session and group, default signals, and a
    higher OOM score than the launcher's."""
    os.setsid()
    for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    confine.set_parent_death_signal(signal.SIGKILL)
    try:
        # When the session reaches its memory limit, the kernel should pick a run, not the
        # launcher: raising our own score needs no privilege (and must precede the uid drop,
        # after which /proc/self/oom_score_adj belongs to root).
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("300")
    except OSError:
        pass


def become_session(cfg: dict) -> None:
    """Take the session's identity for good (a root launcher's children become the session
    uid here, losing every capability) and forbid privilege gains through execve."""
    if cfg.get("drop_uid") is not None:
        confine.drop_privileges(cfg["drop_uid"], cfg["drop_gid"])
    confine.set_no_new_privs()  # also on tier 3: no way back to root through a setuid binary
    confine.set_parent_death_signal(signal.SIGKILL)  # the uid change cleared it
    if os.getppid() != cfg["zygote_pid"]:
        os._exit(0)  # the launcher died before the line above: nobody would reap us


def spare_main(cfg: dict, sock: socket.socket, program: bytes | None) -> None:
    """A pre-forked child: wait for one job from the zygote, then become that run. It waits
    under the launcher's identity, so the session's code cannot stop or kill idle spares,
    and under its seccomp filter already: loading it takes time, which
    a spare pays before the request (nothing the filter refuses happens after ``detach``)."""
    detach()
    if program is not None:
        install_seccomp(program)
    buf = bytearray()
    fds: list[int] = []
    line = recv_line(sock, buf, fds)
    if line is None:
        os._exit(0)
    child_main(cfg, json.loads(line), fds, None, detached=True)


def child_main(
    cfg: dict, req: dict, fds: list[int], program: bytes | None, detached: bool = False
) -> None:
    """Body of a forked run: confine, then run the snippet / exec bash / serve cells."""
    if not detached:
        detach()
    become_session(cfg)
    # Move the passed fds out of the way first: they may already sit on 0..4.
    out, err, chan, loop, *listen = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.dup2(loop, LOOPBACK_FD)  # inheritable: bash and subprocesses may `import think`
    os.dup2(chan, CHANNEL_FD, inheritable=False)
    if listen:
        os.dup2(listen[0], APP_FD)
        os.environ["THINK_APP_FD"] = str(APP_FD)
    os.closerange((APP_FD if listen else CHANNEL_FD) + 1, 65536)
    os.environ["THINK_LOOPBACK_FD"] = str(LOOPBACK_FD)
    kind = req["kind"]
    confine.set_limits(req["limits"], warm=kind == "warm")
    if program is not None:
        install_seccomp(program)
    os.chdir(cfg["cwd"])
    if kind == "bash":
        command = req.get("command")
        if command is None:  # primed: the command comes later, on the channel
            os.set_inheritable(CHANNEL_FD, True)
            command = PRIMED_BASH
        os.execve(cfg["bash"], ["bash", "-c", command], dict(os.environ))
    # Imported here: the bash fork server never loads it (the zygote has, for its children).
    from _think_runner import Runner

    _std_streams()
    chan_sock = socket.socket(fileno=CHANNEL_FD)
    runner = Runner(chan_sock)
    if kind == "python":
        send_msg(chan_sock, runner.run(req["code"]))
        os._exit(0)
    warm_loop(runner, req["limits"])


def warm_loop(runner: Runner, limits: dict) -> None:
    """Serve cells forever: each request brings fresh stdout/stderr pipes for that cell."""
    confine.set_child_subreaper()  # a cell's orphans come back to us, even after setsid()
    buf = bytearray()
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    while True:
        fds: list[int] = []
        line = recv_line(runner.chan, buf, fds)
        if line is None:
            os._exit(0)
        req = json.loads(line)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in fds:
            os.close(fd)
        confine.renew_cpu_budget(int(req.get("cpu_seconds", limits.get("cpu_seconds", 0))))
        result = runner.run(req["code"])
        kill_descendants()  # no orphan survives a cell
        os.dup2(null, 1)
        os.dup2(null, 2)
        send_msg(runner.chan, result)
