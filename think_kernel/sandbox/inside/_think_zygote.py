"""The sandbox zygote: preloads heavy modules once, then forks one confined child per run.

Runs inside the sandbox (stdlib only). Started by ``think_kernel.sandbox.sandbox`` with a JSON
config in ``argv[1]`` and a control socket on the fd it names. Control protocol, one JSON
object per line:

kernel -> zygote   {"op": "spawn", "id", "kind": "python"|"bash"|"warm", "code"?,
                    "command"?, "limits"}  + 4 fds: stdout, stderr, channel, loopback
                   {"op": "kill", "id"}
zygote -> kernel   {"ev": "ready", "pid", "preloaded"} / {"ev": "spawned", "id", "pid"}
                   {"ev": "exit", "id", "code", "signal"}

Each child calls setsid() (so one killpg reaches everything it starts; seccomp then forbids
leaving that group), sets its rlimits and seccomp filter, and either runs one Python snippet,
execs bash, or becomes the session's warm worker, which serves cells over its channel.
"""

from __future__ import annotations

import array
import ast
import base64
import builtins
import fcntl
import io
import json
import linecache
import os
import selectors
import signal
import socket
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _think_confine as confine  # noqa: E402

LOOPBACK_FD = 3
CHANNEL_FD = 4
_MAX_REPR = 20_000


def recv_line(sock: socket.socket, buf: bytearray, fds: list[int]) -> bytes | None:
    """Read one newline-terminated message, collecting any passed fds into ``fds``."""
    while b"\n" not in buf:
        data, anc, _flags, _addr = sock.recvmsg(65536, socket.CMSG_SPACE(16 * 4))
        for level, typ, cdata in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(cdata[: len(cdata) - (len(cdata) % a.itemsize)])
                fds.extend(a)
        if not data:
            return None
        buf += data
    line, _, rest = bytes(buf).partition(b"\n")
    buf[:] = rest
    return line


def send_msg(sock: socket.socket, obj: dict) -> None:
    """Send one JSON line (blocking)."""
    sock.sendall(json.dumps(obj).encode() + b"\n")


# ----------------------------------------------------------------------------- rich output


def mime_bundle(obj: object) -> dict:
    """IPython-style MIME bundle for a value (``_repr_*_`` methods plus text/plain)."""
    data: dict = {}
    if not isinstance(obj, type):
        meth = getattr(obj, "_repr_mimebundle_", None)
        if callable(meth):
            try:
                r = meth()
                if isinstance(r, tuple):
                    r = r[0]
                if isinstance(r, dict):
                    data.update(r)
            except Exception:
                pass
        for name, mime in (
            ("_repr_html_", "text/html"),
            ("_repr_png_", "image/png"),
            ("_repr_jpeg_", "image/jpeg"),
            ("_repr_svg_", "image/svg+xml"),
            ("_repr_markdown_", "text/markdown"),
            ("_repr_latex_", "text/latex"),
            ("_repr_json_", "application/json"),
        ):
            m = getattr(obj, name, None)
            if mime in data or not callable(m):
                continue
            try:
                v = m()
            except Exception:
                continue
            if isinstance(v, tuple):
                v = v[0]
            if v is None:
                continue
            data[mime] = base64.b64encode(v).decode() if isinstance(v, bytes) else v
    for k, v in list(data.items()):
        if isinstance(v, bytes):
            data[k] = base64.b64encode(v).decode()
    try:
        text = repr(obj)
    except Exception as e:
        text = f"<unrepresentable {type(obj).__name__}: {e}>"
    data["text/plain"] = text[:_MAX_REPR]
    return data


class Runner:
    """Executes cells in one namespace and reports over the channel socket."""

    def __init__(self, chan: socket.socket) -> None:
        self.chan = chan
        self.ns: dict = {"__name__": "__main__", "__builtins__": builtins}
        self.count = 0
        builtins.display = self.display  # type: ignore[attr-defined]

    def display(self, *objs: object) -> None:
        """Show objects as rich output in the cell (like IPython's display())."""
        for obj in objs:
            bundle = obj if isinstance(obj, dict) and "text/plain" in obj else mime_bundle(obj)
            self._flush_std()
            send_msg(self.chan, {"ev": "display", "data": bundle})

    def _flush_std(self) -> None:
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except Exception:
                pass

    def flush_figures(self) -> None:
        """Send every open matplotlib figure as a PNG bundle, then close them."""
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        try:
            for num in plt.get_fignums():
                fig = plt.figure(num)
                buf = io.BytesIO()
                fig.savefig(buf, format="png", bbox_inches="tight")
                w, h = fig.get_size_inches() * fig.dpi
                self.display(
                    {
                        "image/png": base64.b64encode(buf.getvalue()).decode(),
                        "text/plain": f"<Figure size {int(w)}x{int(h)} with {len(fig.axes)} Axes>",
                    }
                )
            plt.close("all")
        except Exception as e:
            print(f"[think] could not render figures: {e}", file=sys.stderr)

    def run(self, code: str) -> dict:
        """Run one cell; return the result message (never raises)."""
        self.count += 1
        filename = f"<cell-{self.count}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        try:
            tree = ast.parse(code, filename, "exec")
        except (SyntaxError, ValueError) as e:
            text = "".join(traceback.format_exception_only(type(e), e))
            return {"ev": "result", "category": "syntax", "error": _one_line(e), "traceback": text}
        last = None
        final = tree.body[-1] if tree.body else None
        if isinstance(final, ast.Expr):  # shown like a notebook's Out[]
            tree.body.pop()
            last = ast.Expression(final.value)
        try:
            exec(compile(tree, filename, "exec"), self.ns)
            if last is not None:
                value = eval(compile(last, filename, "eval"), self.ns)
                if value is not None and not _is_figure(value):
                    self.ns["_"] = value
                    self.display(value)
            self.flush_figures()
        except SystemExit as e:
            if e.code not in (None, 0):
                status = e.code if isinstance(e.code, int) else 1
                return {"ev": "result", "category": "runtime", "error": f"SystemExit: {e.code}",
                        "traceback": "", "exit_code": status}  # fmt: skip
        except BaseException as e:  # the cell's failure is data, not our crash
            tb = e.__traceback__
            while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell-"):
                tb = tb.tb_next  # trim our own frames (issue 3: traceback trimmed to user code)
            text = "".join(traceback.format_exception(type(e), e, tb))
            category = "memory" if isinstance(e, MemoryError) else "runtime"
            if isinstance(e, KeyboardInterrupt):
                category = "killed"
            self.flush_figures()
            return {"ev": "result", "category": category, "error": _one_line(e), "traceback": text}
        finally:
            self._flush_std()
        return {"ev": "result", "category": None}


def _is_figure(v: object) -> bool:
    return type(v).__name__ == "Figure" and type(v).__module__.startswith("matplotlib")


def _one_line(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0]}" if msg else type(e).__name__


# ----------------------------------------------------------------------------- children


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
    """First steps of every forked child: own session and group, default signals."""
    os.setsid()
    confine.set_parent_death_signal(signal.SIGKILL)
    for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)


def spare_main(cfg: dict, sock: socket.socket, program: bytes | None) -> None:
    """A pre-forked child: wait for one job from the zygote, then become that run."""
    detach()
    buf = bytearray()
    fds: list[int] = []
    line = recv_line(sock, buf, fds)
    if line is None:
        os._exit(0)
    child_main(cfg, json.loads(line), fds, program, detached=True)


def child_main(
    cfg: dict, req: dict, fds: list[int], program: bytes | None, detached: bool = False
) -> None:
    """Body of a forked run: confine, then run the snippet / exec bash / serve cells."""
    if not detached:
        detach()
    # Move the passed fds out of the way first: they may already sit on 0..4.
    out, err, chan, loop = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.dup2(loop, LOOPBACK_FD)  # inheritable: bash and subprocesses may `import think`
    os.dup2(chan, CHANNEL_FD, inheritable=False)
    os.closerange(CHANNEL_FD + 1, 65536)
    os.environ["THINK_LOOPBACK_FD"] = str(LOOPBACK_FD)
    kind = req["kind"]
    confine.set_limits(req["limits"], warm=kind == "warm")
    if program is not None:
        confine.install_seccomp(program)
    os.chdir(cfg["cwd"])
    if kind == "bash":
        os.execve(cfg["bash"], ["bash", "-c", req["command"]], dict(os.environ))
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
        kill_descendants()  # issue 3: no orphan survives a cell
        os.dup2(null, 1)
        os.dup2(null, 2)
        send_msg(runner.chan, result)


# ----------------------------------------------------------------------------- zygote


def preload(mods: list[str], code: str) -> list[str]:
    """Import ``mods`` and run the warm-up ``code`` once, in the zygote, before any fork."""
    done = []
    for name in mods:
        try:
            __import__(name)
            done.append(name)
        except Exception:
            pass
    if code:
        try:
            exec(compile(code, "<preload>", "exec"), {"__name__": "__preload__"})
        except Exception:
            pass
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.show = lambda *a, **k: None  # type: ignore[attr-defined]  # collected after cells
    return done


def main() -> None:
    cfg = json.loads(sys.argv[1])
    ctl = socket.socket(fileno=cfg["ctl_fd"])
    ctl.setblocking(True)
    if cfg.get("drop_uid") is not None:
        confine.drop_privileges(cfg["drop_uid"], cfg["drop_gid"])
    confine.set_parent_death_signal(signal.SIGKILL)
    confine.set_child_subreaper()
    loaded = preload(cfg.get("preload", []), cfg.get("preload_code", ""))
    if cfg.get("landlock"):
        confine.apply_landlock(cfg["landlock"]["read"], cfg["landlock"]["write"])
    program = confine.build_seccomp_filter() if cfg.get("seccomp") else None

    rpipe, wpipe = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wpipe)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sel = selectors.DefaultSelector()
    sel.register(ctl, selectors.EVENT_READ, "ctl")
    sel.register(rpipe, selectors.EVENT_READ, "sig")
    runs: dict[int, int] = {}  # pid -> run id
    pids: dict[int, int] = {}  # run id -> pid
    buf = bytearray()
    fds: list[int] = []
    send_msg(ctl, {"ev": "ready", "pid": os.getpid(), "preloaded": loaded})

    def reap() -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            rid = runs.pop(pid, None)
            if rid is None:  # a spare that died, or an adopted orphan (we are a subreaper)
                for i, (spid, ssock) in enumerate(spares):
                    if spid == pid:
                        ssock.close()
                        del spares[i]
                        break
                continue
            pids.pop(rid, None)
            try:
                os.killpg(pid, signal.SIGKILL)  # whatever the run left behind
            except OSError:
                pass
            if program is None:
                # Without seccomp (tier 3) a run can setsid() out of its group; its orphans
                # are adopted by us (a subreaper). With seccomp killpg above is complete.
                kill_orphans()
            code = os.waitstatus_to_exitcode(status)
            send_msg(ctl, {"ev": "exit", "id": rid, "code": code if code >= 0 else None,
                           "signal": -code if code < 0 else None})  # fmt: skip

    def spare_pids() -> set[int]:
        return {pid for pid, _ in spares}

    def kill_orphans() -> None:
        # Killing an adopted orphan hands its own children to us in turn: repeat until the
        # scan finds none (bounded, a fork bomb is stopped by RLIMIT_NPROC anyway).
        me = os.getpid()
        for _ in range(50):
            found = []
            for name in os.listdir("/proc"):
                if not name.isdigit() or int(name) in runs or int(name) in spare_pids():
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

    spares: list[tuple[int, socket.socket]] = []
    n_spares = int(cfg.get("prefork", 0))

    def fork_spare() -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            try:
                mine.close()
                spare_main(cfg, theirs, program)
            except BaseException:
                traceback.print_exc()
            os._exit(70)
        theirs.close()
        spares.append((pid, mine))

    refill = True
    while True:
        if refill:
            # Off the critical path: the previous request has been answered already.
            refill = False
            live = {pid for pid, _ in spares}
            while len(spares) < n_spares and len(live) < n_spares:
                fork_spare()
                live = {pid for pid, _ in spares}
        for key, _ in sel.select():
            if key.data == "sig":
                try:
                    while os.read(rpipe, 512):
                        pass
                except BlockingIOError:
                    pass
                reap()
                continue
            line = recv_line(ctl, buf, fds)
            if line is None:
                for pid in list(runs):
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except OSError:
                        pass
                os._exit(0)
            while line is not None:
                req = json.loads(line)
                if req["op"] == "spawn":
                    mine, fds[:] = fds[:4], fds[4:]
                    pid = 0
                    while spares and not pid:
                        # Hand the job to a pre-forked child: the fork is already paid.
                        spid, ssock = spares.pop(0)
                        try:
                            ssock.sendmsg([line + b"\n"], [(socket.SOL_SOCKET,
                                          socket.SCM_RIGHTS, array.array("i", mine))])  # fmt: skip
                            pid = spid
                        except OSError:
                            pass  # that spare died; try the next or fork
                        ssock.close()
                    if not pid:
                        pid = os.fork()
                        if pid == 0:
                            try:
                                child_main(cfg, req, mine, program)
                            except BaseException:
                                traceback.print_exc()
                            os._exit(70)
                    for fd in mine:
                        os.close(fd)
                    runs[pid] = req["id"]
                    pids[req["id"]] = pid
                    send_msg(ctl, {"ev": "spawned", "id": req["id"], "pid": pid})
                    refill = True
                elif req["op"] == "kill":
                    victim = pids.get(req["id"])
                    if victim is not None:
                        try:
                            os.killpg(victim, signal.SIGKILL)
                        except OSError:
                            pass
                line = recv_line(ctl, buf, fds) if b"\n" in buf else None


if __name__ == "__main__":
    main()
