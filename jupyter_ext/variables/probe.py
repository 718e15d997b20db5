"""The code that reads a notebook kernel's variables, run inside that kernel, read-only.

The server sends this file's text in a silent ``execute_request`` as a user expression
(:func:`expression`): it runs in a fresh dict of globals, so nothing of it lands in the user's
namespace, and its answer is one JSON string. It only reads: types, shapes, dtypes, lengths,
null counts, array statistics, and a few rows of a DataFrame or Series whose cells are shown
only when they are plain values (str, numbers, dates); it never calls ``repr`` or ``str`` of an
arbitrary object, nor reads an attribute of one (a ``__repr__`` or ``__getattr__`` may hang,
or build gigabytes). Each variable gets a time budget, enforced by ``SIGALRM`` in the kernel's
main thread (an exception derived from ``BaseException``, repeated until the probe is done, so
an ``except Exception`` in user code cannot swallow it); the server's own deadline covers a
kernel stuck in C code.

Stdlib only at the top (pandas and numpy are used when the user already imported them), and
plain Python 3.8 syntax: it runs in the user's interpreter, whatever its version.

    probe(namespace, {"names": ["df"]}, hidden=set())   # the JSON answer, as a string
"""

import json
import math
import signal
import sys
import threading
import time

LIMITS: dict = {
    "max_vars": 100,  # variables listed when no names are asked for
    "max_cols": 20,  # DataFrame columns described and shown
    "head_rows": 5,  # rows of a DataFrame or Series shown
    "max_chars": 2000,  # characters of one shown head
    "max_text": 80,  # characters of one shown value
    "max_output": 60000,  # characters of the whole answer
    "per_var": 0.5,  # seconds one variable may take
    "budget": 2.0,  # seconds the whole probe may take
    "stats_elems": 5000000,  # array elements read for statistics (beyond: a strided sample)
}
PLAIN = (str, int, float, bool, complex, type(None), bytes)


class ProbeTimeout(BaseException):
    """The variable's time budget ran out (a BaseException: user code rarely catches it)."""


class _Alarm:
    """A SIGALRM timer that raises ProbeTimeout while armed (main thread only)."""

    def __init__(self):
        self.armed = False
        self.usable = (
            hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
        )
        self.old_handler = None
        self.old_timer = (0.0, 0.0)
        self.started = time.monotonic()

    def _fire(self, signum, frame):
        if self.armed:
            raise ProbeTimeout()

    def __enter__(self):
        if self.usable:
            self.old_handler = signal.signal(signal.SIGALRM, self._fire)
            self.old_timer = signal.setitimer(signal.ITIMER_REAL, 0)
        return self

    def arm(self, seconds):
        """Raise ProbeTimeout in ``seconds``, then again every 50 ms until disarmed."""
        if self.usable:
            self.armed = True
            signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001), 0.05)

    def disarm(self):
        """No more ProbeTimeout (the flag first: a signal already on its way does nothing)."""
        self.armed = False
        if self.usable:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def __exit__(self, *exc):
        self.disarm()
        if self.usable:
            old = self.old_handler
            signal.signal(signal.SIGALRM, signal.SIG_DFL if old is None else old)
            delay, interval = self.old_timer
            if delay:  # the user's own timer goes on, less the time the probe took
                left = delay - (time.monotonic() - self.started)
                signal.setitimer(signal.ITIMER_REAL, max(left, 0.001), interval)
        return False


def _type_name(t):
    module = getattr(t, "__module__", "") or ""
    name = getattr(t, "__qualname__", "") or getattr(t, "__name__", "") or "?"
    return name if module == "builtins" else module + "." + name


def short(value, limits):
    """A bounded text of a plain value; ``<Type>`` for anything else (never its repr)."""
    n = limits["max_text"]
    t = type(value)
    if t is str:
        return value if len(value) <= n else value[: n - 1] + "…"
    if t is bool or value is None:
        return str(value)
    if t is int:
        if int.bit_length(value) > 200:
            return f"<int of {int.bit_length(value)} bits>"
        return int.__repr__(value)
    if t is float:
        return float.__repr__(value)
    if t is complex:
        return complex.__repr__(value)
    if t is bytes:
        text = bytes.__repr__(value[:n])
        return text + ("…" if len(value) > n else "")
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.generic) and t.__module__ == "numpy":
        return str(value)[:n]
    pd = sys.modules.get("pandas")
    if (pd is not None and t in (pd.Timestamp, pd.Timedelta)) or t.__module__ == "datetime":
        return str(value)[:n]
    return "<" + _type_name(t) + ">"


def _number(x):
    """A JSON number (non-finite floats as strings: JSON has no NaN)."""
    x = float(x)
    return x if math.isfinite(x) else str(x)


def _label(value, limits):
    """A column or index label: its text when plain, else its type."""
    return short(value, limits) if type(value) is not str else value[: limits["max_text"]]


def _plain_head(frame, pd, labels, limits):
    """A copy of the few rows ``frame`` with the cells of every column that is not numbers or
    dates as bounded text (objects as ``<Type>``): their own ``repr`` is never called."""
    cols = {}
    for i in range(frame.shape[1]):
        col = frame.iloc[:, i]
        if getattr(col.dtype, "kind", "O") not in "biufcmM":
            col = col.astype(object).map(lambda v: short(v, limits))
        cols[i] = col.to_numpy()
    out = pd.DataFrame(cols, index=[_label(x, limits) for x in frame.index])
    out.columns = labels
    return out


def _head_text(frame, limits):
    text = frame.to_string(
        max_rows=limits["head_rows"], max_cols=limits["max_cols"], max_colwidth=limits["max_text"]
    )
    return text if len(text) <= limits["max_chars"] else text[: limits["max_chars"]] + "\n…"


def describe_frame(df, pd, limits, out):
    """Shape, columns (name, dtype, nulls) and a bounded head of a DataFrame."""
    rows, cols = df.shape
    out.update(kind="dataframe", shape=[rows, cols])
    shown = df.iloc[:, : limits["max_cols"]]
    columns: list = []
    out["columns"] = columns
    if cols > len(shown.columns):
        out["columns_omitted"] = cols - len(shown.columns)
    for i, name in enumerate(shown.columns):
        columns.append({"name": _label(name, limits), "dtype": str(shown.dtypes.iloc[i])})
    for i, col in enumerate(columns):
        col["nulls"] = int(shown.iloc[:, i].isna().sum())
    head = shown.head(limits["head_rows"])
    out["head"] = _head_text(_plain_head(head, pd, [c["name"] for c in columns], limits), limits)


def describe_series(s, pd, limits, out):
    """Length, dtype, nulls and a bounded head of a Series."""
    out.update(kind="series", shape=[len(s)], dtype=str(s.dtype))
    if s.name is not None:
        out["series_name"] = _label(s.name, limits)
    out["nulls"] = int(s.isna().sum())
    head = s.head(limits["head_rows"]).to_frame(name="value")
    out["head"] = _head_text(_plain_head(head, pd, ["value"], limits), limits)


def describe_array(a, np, limits, out):
    """Shape, dtype, size and (numeric arrays) min, max, mean, std and NaN count."""
    out.update(kind="ndarray", shape=list(a.shape), dtype=str(a.dtype), size=int(a.size))
    out["nbytes"] = int(a.nbytes)
    numeric = a.dtype.kind in "biuf"
    if not numeric or a.size == 0:
        return
    flat = a
    if a.size > limits["stats_elems"]:
        if not a.flags.c_contiguous:
            out["stats"] = "skipped: a large array that is not contiguous"
            return
        step = -(-a.size // limits["stats_elems"])
        flat = a.reshape(-1)[::step]
        out["stats_sample"] = int(flat.size)
    stats = {}
    with np.errstate(all="ignore"):
        if a.dtype.kind == "f":
            nans = int(np.isnan(flat).sum())
            stats["nans"] = nans
            if nans == flat.size:
                out["stats"] = stats
                return
            fns = (("min", np.nanmin), ("max", np.nanmax), ("mean", np.nanmean), ("std", np.nanstd))
        else:
            fns = (("min", np.min), ("max", np.max), ("mean", np.mean), ("std", np.std))
        for key, fn in fns:
            stats[key] = _number(fn(flat))
    out["stats"] = stats


def _builtin_len(value, t):
    for base in (list, tuple, dict, set, frozenset, str, bytes, bytearray):
        if issubclass(t, base):
            return base.__len__(value)
    return None


def describe_value(value, limits):
    """The summary of one variable: its type and what can be read without running its code."""
    t = type(value)
    out = {"type": _type_name(t)}
    pd = sys.modules.get("pandas")
    np = sys.modules.get("numpy")
    if pd is not None and issubclass(t, pd.DataFrame):
        describe_frame(value, pd, limits, out)
    elif pd is not None and issubclass(t, pd.Series):
        describe_series(value, pd, limits, out)
    elif np is not None and issubclass(t, np.ndarray):
        describe_array(value, np, limits, out)
    elif t in PLAIN:
        out.update(kind="value", value=short(value, limits))
        length = _builtin_len(value, t)
        if length is not None:
            out["length"] = length
    elif t.__module__ == "builtins" and t.__name__ in ("module", "function", "type"):
        out["kind"] = {"type": "class"}.get(t.__name__, t.__name__)
    else:
        out["kind"] = "object"
        length = _builtin_len(value, t)
        if length is not None:  # a list, dict, set...: its length, types of its first items
            out.update(kind="collection", length=length)
            if t in (list, tuple) and length:
                out["items"] = [_type_name(type(x)) for x in value[:5]]
            elif t is dict and length:
                out["keys"] = [short(k, limits) for k in list(dict.keys(value))[:5]]
    return out


def _listed(ns, hidden, limits):
    names = []
    for name in list(ns):
        if type(name) is not str or name.startswith("_") or name in hidden:
            continue
        if type(ns[name]).__name__ == "module" and type(ns[name]).__module__ == "builtins":
            continue
        names.append(name)
    return names


def probe(ns, args, hidden=()):
    """Describe ``args["names"]`` (or every user variable) of namespace ``ns``, as JSON text."""
    limits = dict(LIMITS)
    limits.update({k: v for k, v in (args.get("limits") or {}).items() if k in LIMITS})
    started = time.monotonic()
    asked = args.get("names")
    names = list(asked) if asked else _listed(ns, set(hidden), limits)
    answer: dict = {"variables": [], "missing": []}
    if len(names) > limits["max_vars"]:
        answer["omitted"] = len(names) - limits["max_vars"]
        names = names[: limits["max_vars"]]
    with _Alarm() as alarm:
        for name in names:
            if name not in ns:
                answer["missing"].append(name)
                continue
            left = limits["budget"] - (time.monotonic() - started)
            if left <= 0:
                answer.setdefault("not_described", []).append(name)
                continue
            out = {"name": name}
            try:
                alarm.arm(min(limits["per_var"], left))
                out.update(describe_value(ns[name], limits))
            except ProbeTimeout:
                out["error"] = f"timed out after {limits['per_var']:g} s (partial)"
            except Exception as e:  # a property of a pandas or numpy object that fails
                out["error"] = f"{type(e).__name__} while reading it"
            finally:
                alarm.disarm()
            out.setdefault("type", "?")
            answer["variables"].append(out)
    return _bounded(answer, limits, started)


def _bounded(answer, limits, started):
    """The JSON text, within ``max_output`` characters (heads dropped first, then variables)."""
    answer["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
    text = json.dumps(answer)
    if len(text) > limits["max_output"]:
        for var in answer["variables"]:
            if var.pop("head", None) is not None:
                var["head_omitted"] = True
        text = json.dumps(answer)
    while len(text) > limits["max_output"] and answer["variables"]:
        answer.setdefault("not_described", []).append(answer["variables"].pop()["name"])
        answer["truncated"] = True
        text = json.dumps(answer)
    return text


def run(args):
    """Probe the IPython kernel's user namespace (what the user expression calls)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return json.dumps({"error": "not an IPython kernel"})
    hidden = getattr(shell, "user_ns_hidden", {}) or {}
    return probe(shell.user_ns, args, hidden)
