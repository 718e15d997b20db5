"""Runs cells of Python for the sandbox (stdlib only): exec with a notebook-style last
expression, rich output as MIME bundles, matplotlib figures, categorised errors."""

from __future__ import annotations

import ast
import base64
import builtins
import io
import linecache
import socket
import sys
import traceback

from _think_wire import send_msg

_MAX_REPR = 20_000


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
                tb = tb.tb_next  # trim our own frames (the traceback shows the user's code only)
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
