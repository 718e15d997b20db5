"""The sandbox zygote: forks one confined child per run, from heavy modules loaded once.

Runs inside the sandbox (stdlib only). Started by ``think_kernel.sandbox.launcher`` with a JSON
config in ``argv[1]`` and a control socket on the fd it names. Control protocol, one JSON
object per line (see ``_think_wire``):

kernel -> zygote   {"op": "spawn", "id", "kind": "python"|"bash"|"warm", "code"?,
                    "command"?, "limits", "listen"?}  + 4 fds: stdout, stderr, channel,
                   loopback (+ a 5th with "listen": an app's listening socket)
                   (a bash run without "command" is primed: it waits for its command
                   on the channel, see ``_think_child.PRIMED_BASH``)
                   {"op": "kill", "id"}  /  {"op": "ping", "n"}  /  {"op": "preload"}
zygote -> kernel   {"ev": "ready", "pid", "preloaded"} / {"ev": "spawned", "id", "pid"}
                   {"ev": "exit", "id", "code", "signal", "error"?}  /  {"ev": "pong", "n"}
                   {"ev": "preloaded", "preloaded"}

Ready comes before the preload: a thread imports the heavy modules (``_think_preload``), at
once or, with ``preload_deferred``, at the kernel's "preload" or the first Python run, while
the zygote answers pings and hands bash runs on. Python runs wait for it.

Identity: a root kernel starts the zygote as uid 0 with only the capabilities it
needs to hand each child the session's uid and to kill it (``LAUNCHER_CAPS``); children
therefore run under another uid than their launcher and cannot signal or trace it, and the
seccomp filter also refuses signals aimed at the launcher (which covers non-root kernels).
Each child calls setsid() (so one killpg reaches everything it starts; seccomp then forbids
leaving that group), sets its rlimits and seccomp filter, and runs (see ``_think_child``).

Bash runs come from a second, small fork server, forked before the preload: a child
of a zygote with numpy, pandas and matplotlib loaded pays for that address space twice (the
fork copies its page tables, the exec tears it down), a cost on every command. The
zygote hands each bash request to it with the same protocol and relays its events; it has the
same identity, Landlock rules and seccomp filter (with both fork servers protected).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _think_confine as confine  # noqa: E402
from _think_child import child_main, spare_main  # noqa: E402
from _think_seccomp import build_seccomp_filter  # noqa: E402
from _think_wire import recv_line, send_msg, send_with_fds  # noqa: E402

TYPE_CHECKING = False  # not typing's: its import is paid on every sandbox start
if TYPE_CHECKING:
    from _think_preload import Preloader


def print_exc() -> None:
    """The traceback on stderr (imported only then: the bash fork server stays small)."""
    import traceback

    traceback.print_exc()


def protected_pids() -> list[int]:
    """Processes sandboxed code must not signal: us, our group, our parent (the kernel on
    tiers 2 and 3, bwrap's init on tier 1) and its group, and pid 1."""
    me, parent = os.getpid(), os.getppid()
    out = {me, os.getpgrp(), parent, 1}
    try:
        out.add(os.getpgid(parent))
    except OSError:
        pass
    return sorted(out)


def setup_identity(cfg: dict) -> None:
    """Join the session's cgroups, then shed what a launcher does not need."""
    for fd in cfg.get("cgroup_fds", []):
        os.write(fd, b"0")  # "0" = the writer: we, and every child we fork, are in
        os.close(fd)
    if cfg.get("drop_uid") is not None and os.geteuid() == 0:
        confine.keep_only_capabilities(confine.LAUNCHER_CAPS)
        os.setgroups([])
    confine.set_dumpable(False)
    confine.set_parent_death_signal(signal.SIGKILL)
    confine.set_child_subreaper()


class Zygote:
    """The fork server: owns the control socket, the pre-forked spares and the runs."""

    def __init__(
        self,
        cfg: dict,
        ctl: socket.socket,
        program: bytes | None,
        light: tuple[int, socket.socket] | None = None,
        preloader: Preloader | None = None,
    ) -> None:
        self.cfg = cfg
        self.ctl = ctl
        self.program = program
        #: The program of a live app that binds its own port (tier 1), None elsewhere.
        self.net_program: bytes | None = None
        self.runs: dict[int, int] = {}  # pid -> run id
        self.pids: dict[int, int] = {}  # run id -> pid
        self.spares: list[tuple[int, socket.socket]] = []
        self.n_spares = int(cfg.get("prefork", 0))
        # The bash fork server (pid, socket), and the runs it holds: run id -> pid (0 until
        # it reports the spawn).
        self.light = light
        self.lent: dict[int, int] = {}
        # The heavy preload (None: none, as in the bash fork server), and the Python runs
        # that wait for it: (line, request, fds).
        self.preloader = preloader
        self.waiting: list[tuple[bytes, dict, list[int]]] = []

    @property
    def loading(self) -> bool:
        """True until the preload thread is done: no Python fork meanwhile."""
        return self.preloader is not None and not self.preloader.done

    def preloaded(self) -> None:
        """The preload thread is done: say so, start the Python runs that waited for it."""
        assert self.preloader is not None
        loaded = self.preloader.finish()
        send_msg(self.ctl, {"ev": "preloaded", "preloaded": loaded})
        waiting, self.waiting = self.waiting, []
        for line, req, mine in waiting:
            self.spawn(line, req, mine)

    def drop_waiting(self, rid: int) -> bool:
        """A kill for a Python run still waiting for the preload: it ends unstarted."""
        for i, (_, req, mine) in enumerate(self.waiting):
            if req["id"] == rid:
                del self.waiting[i]
                for fd in mine:
                    os.close(fd)
                send_msg(self.ctl, {"ev": "spawned", "id": rid, "pid": None})
                send_msg(self.ctl, {"ev": "exit", "id": rid, "code": None, "signal": 9})
                return True
        return False

    def reap(self) -> None:
        """Collect exited children; report runs that ended."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            rid = self.runs.pop(pid, None)
            if rid is None:  # a spare that died, or an adopted orphan (we are a subreaper)
                for i, (spid, ssock) in enumerate(self.spares):
                    if spid == pid:
                        ssock.close()
                        del self.spares[i]
                        break
                continue
            self.pids.pop(rid, None)
            try:
                os.killpg(pid, signal.SIGKILL)  # whatever the run left behind
            except OSError:
                pass
            if self.program is None:
                # Without seccomp (tier 3) a run can setsid() out of its group; its orphans
                # are adopted by us (a subreaper). With seccomp killpg above is complete.
                self.kill_orphans()
            code = os.waitstatus_to_exitcode(status)
            send_msg(self.ctl, {"ev": "exit", "id": rid, "code": code if code >= 0 else None,
                                "signal": -code if code < 0 else None})  # fmt: skip

    def kill_orphans(self) -> None:
        """Kill adopted orphans; killing one hands its own children to us in turn, so repeat
        until the scan finds none (bounded: a fork bomb is stopped by the pids limits)."""
        me = os.getpid()
        for _ in range(50):
            skip = set(self.runs) | {pid for pid, _ in self.spares}
            if self.light is not None:
                skip.add(self.light[0])
            found = []
            for name in os.listdir("/proc"):
                if not name.isdigit() or int(name) in skip:
                    continue
                try:
                    with open(f"/proc/{name}/stat", "rb") as f:
                        stat = f.read()
                    if int(stat[stat.rindex(b")") + 2 :].split()[1]) == me:
                        found.append(int(name))
                except (OSError, ValueError):
                    continue
            if not found:
                return
            for pid in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)  # gone (not a zombie) before we rescan
                except OSError:
                    pass

    def fork_spare(self) -> None:
        """Fork a child that waits for its job (the fork is paid before the request)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            pid = os.fork()
        except OSError:  # the session is at its process limit: fork on demand later
            mine.close()
            theirs.close()
            return
        if pid == 0:
            try:
                mine.close()
                spare_main(self.cfg, theirs, self.program)
            except BaseException:
                print_exc()
            os._exit(70)
        theirs.close()
        self.spares.append((pid, mine))

    def refill(self) -> None:
        """Top the spares up (off the critical path: the last request was answered)."""
        while not self.loading and len(self.spares) < self.n_spares:
            before = len(self.spares)
            self.fork_spare()
            if len(self.spares) == before:
                return

    def lend(self, line: bytes, req: dict, mine: list[int]) -> bool:
        """Hand a bash run to the bash fork server; False if there is none (any more)."""
        if self.light is None or req.get("kind") != "bash":
            return False
        try:
            send_with_fds(self.light[1], line + b"\n", mine)
        except OSError:
            self.light_gone()
            return False
        for fd in mine:
            os.close(fd)
        self.lent[req["id"]] = 0
        return True

    def from_light(self, line: bytes) -> None:
        """An event of the bash fork server: note its pids, pass spawns and exits on."""
        msg = json.loads(line)
        rid = msg.get("id")
        if msg.get("ev") == "spawned" and rid in self.lent:
            self.lent[rid] = msg.get("pid") or 0
        elif msg.get("ev") == "exit" and rid in self.lent:
            del self.lent[rid]
        else:
            return  # its "ready", or news of a run we no longer hold
        self.ctl.sendall(line + b"\n")

    def light_gone(self) -> None:
        """The bash fork server died (its runs died with it: their parent-death signal)."""
        if self.light is None:
            return
        self.light[1].close()
        self.light = None
        for rid, pid in list(self.lent.items()):
            if not pid:
                send_msg(self.ctl, {"ev": "spawned", "id": rid, "pid": None})
            send_msg(self.ctl, {"ev": "exit", "id": rid, "code": None, "signal": 9})
        self.lent.clear()

    def stop_light(self) -> None:
        """On our way out: the bash fork server kills its runs on EOF, then exits (waited
        for up to a second; our exit would kill it by its parent-death signal before that)."""
        if self.light is None:
            return
        pid, sock = self.light
        sock.close()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    return
            except ChildProcessError:
                return
            time.sleep(0.005)

    def spawn(self, line: bytes, req: dict, mine: list[int]) -> None:
        """Start one run: lend a bash run to the bash fork server, else use a spare, or fork."""
        if not req.get("net") and self.lend(line, req, mine):
            return
        if self.loading:
            assert self.preloader is not None
            self.preloader.go()  # a Python run is the first need of the preloaded modules
            self.waiting.append((line, req, mine))
            return
        pid = 0
        # A spare waits under the strict filter already, and a filter is never relaxed: a
        # run with inet sockets is forked here, under its own.
        net = bool(req.get("net")) and self.net_program is not None
        while self.spares and not pid and not net:
            spid, ssock = self.spares.pop(0)
            try:
                send_with_fds(ssock, line + b"\n", mine)
                pid = spid
            except OSError:
                pass  # that spare died; try the next or fork
            ssock.close()
        error = None
        if not pid:
            try:
                pid = os.fork()
            except OSError as e:
                error = f"cannot start a process: {e.strerror} (the session's process limit?)"
            if pid == 0 and error is None:
                try:
                    child_main(self.cfg, req, mine, self.net_program if net else self.program)
                except BaseException:
                    print_exc()
                os._exit(70)
        for fd in mine:
            os.close(fd)
        if error is not None:
            send_msg(self.ctl, {"ev": "spawned", "id": req["id"], "pid": None})
            send_msg(self.ctl, {"ev": "exit", "id": req["id"], "code": None, "signal": None,
                                "error": error})  # fmt: skip
            return
        self.runs[pid] = req["id"]
        self.pids[req["id"]] = pid
        send_msg(self.ctl, {"ev": "spawned", "id": req["id"], "pid": pid})

    def handle(self, line: bytes, fds: list[int]) -> None:
        """One control request."""
        req = json.loads(line)
        op = req["op"]
        if op == "spawn":
            n = 5 if req.get("listen") else 4
            mine, fds[:] = fds[:n], fds[n:]
            self.spawn(line, req, mine)
        elif op == "kill":
            if req["id"] in self.lent and self.light is not None:
                # Its run: Landlock (ABI 6) scopes signals to a domain, and the bash fork
                # server confined itself apart from us, so it kills its own runs.
                try:
                    self.light[1].sendall(line + b"\n")
                except OSError:
                    self.light_gone()
                return
            if self.drop_waiting(req["id"]):
                return
            victim = self.pids.get(req["id"])
            if victim is not None:
                try:
                    os.killpg(victim, signal.SIGKILL)
                except OSError:
                    pass
        elif op == "ping":
            send_msg(self.ctl, {"ev": "pong", "n": req.get("n")})
        elif op == "preload" and self.preloader is not None:
            self.preloader.go()

    def serve(self, loaded: list[str]) -> None:
        """The main loop: requests from the kernel, SIGCHLD from the children."""
        rpipe, wpipe = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wpipe)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        sel = selectors.DefaultSelector()
        sel.register(self.ctl, selectors.EVENT_READ, "ctl")
        sel.register(rpipe, selectors.EVENT_READ, "sig")
        light_buf = bytearray()
        if self.light is not None:
            sel.register(self.light[1], selectors.EVENT_READ, "light")
        if self.preloader is not None:
            sel.register(self.preloader.rfd, selectors.EVENT_READ, "preload")
        buf = bytearray()
        fds: list[int] = []
        send_msg(self.ctl, {"ev": "ready", "pid": os.getpid(), "preloaded": loaded})
        while True:
            self.refill()
            for key, _ in sel.select():
                if key.data == "sig":
                    try:
                        while os.read(rpipe, 512):
                            pass
                    except BlockingIOError:
                        pass
                    self.reap()
                    continue
                if key.data == "preload":
                    sel.unregister(key.fileobj)
                    self.preloaded()
                    continue
                if key.data == "light":
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    got = recv_line(sock, light_buf, [])
                    if got is None:  # it died
                        sel.unregister(sock)
                        self.light_gone()
                    while got is not None:
                        self.from_light(got)
                        got = recv_line(sock, light_buf, []) if b"\n" in light_buf else None
                    continue
                line = recv_line(self.ctl, buf, fds)
                if line is None:
                    for pid in list(self.runs):
                        try:
                            os.killpg(pid, signal.SIGKILL)
                        except OSError:
                            pass
                    self.stop_light()
                    os._exit(0)
                while line is not None:
                    self.handle(line, fds)
                    line = recv_line(self.ctl, buf, fds) if b"\n" in buf else None


def confinement(cfg: dict, protected: list[int]) -> bytes | None:
    """Landlock this fork server; the seccomp program its children install (or None)."""
    if cfg.get("landlock"):
        confine.apply_landlock(cfg["landlock"]["read"], cfg["landlock"]["write"])
    if not cfg.get("seccomp"):
        return None
    return build_seccomp_filter(protected, no_sockets=cfg.get("no_sockets", False))


def start_light(
    cfg: dict, ctl: socket.socket, protected: list[int]
) -> tuple[int, socket.socket] | None:
    """Fork the bash fork server (before the preload: its forks are small); None if we
    cannot (the zygote then forks bash runs itself)."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        pid = os.fork()
    except OSError:
        mine.close()
        theirs.close()
        return None
    if pid == 0:
        try:
            mine.close()
            ctl.close()  # the kernel's socket is the zygote's alone (its EOF is the zygote's end)
            # Not inherited across fork: die with the zygote, adopt our runs' orphans.
            confine.set_parent_death_signal(signal.SIGKILL)
            if os.getppid() != cfg["zygote_pid"]:
                os._exit(0)
            confine.set_child_subreaper()
            me = os.getpid()
            program = confinement(cfg, sorted({*protected, me}))
            Zygote({**cfg, "zygote_pid": me}, theirs, program).serve([])
        except BaseException:
            print_exc()
        os._exit(70)
    theirs.close()
    return pid, mine


def main() -> None:
    """Start-up: identity and limits, the bash fork server, the preload thread, Landlock,
    the seccomp program, then serve."""
    cfg = json.loads(sys.argv[1])
    ctl = socket.socket(fileno=cfg["ctl_fd"])
    ctl.setblocking(True)
    setup_identity(cfg)
    cfg["zygote_pid"] = os.getpid()
    protected = protected_pids()
    light = start_light(cfg, ctl, protected)
    if light is not None:
        protected = sorted({*protected, light[0]})
    uid, gid = cfg.get("drop_uid"), cfg.get("drop_gid")
    as_session = uid is not None and os.geteuid() == 0
    with confine.files_as(uid if as_session else None, gid if as_session else None):
        for d in cfg.get("make_dirs", []):  # tier 1 scratch lives on a fresh tmpfs
            os.makedirs(d, mode=0o700, exist_ok=True)
    # Imported after the bash fork server's fork: that server stays without threading & co.
    from _think_preload import Preloader

    preloader = Preloader(cfg)  # before Landlock, which binds only the thread applying it
    program = confinement(cfg, protected)
    zygote = Zygote(cfg, ctl, program, light, preloader)
    if program is not None and cfg.get("app_net"):
        zygote.net_program = build_seccomp_filter(protected, inet=True)
    zygote.serve([])


if __name__ == "__main__":
    main()
