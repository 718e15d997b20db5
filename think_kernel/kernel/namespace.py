"""A compact summary of a user's namespace, given to the agent by ``%think`` as context.

    summarize_namespace(get_ipython().user_ns)
    # df: DataFrame shape=(3, 2) columns=['a', 'b'] dtypes={a: int64, b: object}
    # xs: list len=3 [1, 2, 3]

Names, types, shapes and columns of DataFrames / arrays, lengths and short reprs. Private
names, modules, callables defined elsewhere and IPython's own variables are skipped; every line
and the whole summary are bounded so a huge namespace never floods the prompt.
"""

from __future__ import annotations

import reprlib
import types
from typing import Any

LINE_CHARS = 200
MAX_NAMES = 60
MAX_CHARS = 6000
MAX_COLUMNS = 30
# Names IPython and ipykernel put in user_ns (history, exit helpers, magics' results).
_IPYTHON_NAMES = {"In", "Out", "exit", "quit", "get_ipython", "open"}

_repr = reprlib.Repr()
_repr.maxstring = 80
_repr.maxother = 80
_repr.maxlist = _repr.maxtuple = _repr.maxset = _repr.maxdict = 6
_repr.maxlevel = 2


def _skip(name: str, value: Any, hidden: set[str]) -> bool:
    if name.startswith("_") or name in _IPYTHON_NAMES or name in hidden:
        return True
    if isinstance(value, types.ModuleType | type):
        return True
    return isinstance(value, types.FunctionType | types.BuiltinFunctionType) and getattr(
        value, "__module__", "__main__"
    ) not in ("__main__", None)


def _short_repr(value: Any) -> str:
    try:
        text = _repr.repr(value)
    except Exception:  # a broken __repr__ must not break the request
        text = f"<{type(value).__name__}>"
    return " ".join(text.split())


def describe(name: str, value: Any) -> str:
    """One line for one variable."""
    kind = type(value).__name__
    shape = getattr(value, "shape", None)
    columns = getattr(value, "columns", None)
    if columns is not None and shape is not None:  # pandas / polars DataFrame
        cols = [str(c) for c in list(columns)[:MAX_COLUMNS]]
        more = f" +{len(columns) - MAX_COLUMNS} more" if len(columns) > MAX_COLUMNS else ""
        dtypes = getattr(value, "dtypes", None)
        types_ = ""
        if dtypes is not None and hasattr(dtypes, "items"):
            pairs = [f"{k}: {v}" for k, v in list(dtypes.items())[:MAX_COLUMNS]]
            types_ = " dtypes={" + ", ".join(pairs) + "}"
        line = f"{name}: {kind} shape={tuple(shape)} columns={cols}{more}{types_}"
    elif shape is not None and hasattr(value, "dtype"):  # numpy arrays, tensors, Series
        line = f"{name}: {kind} shape={tuple(shape)} dtype={value.dtype}"
    elif isinstance(value, str | bytes | list | tuple | dict | set | frozenset):
        line = f"{name}: {kind} len={len(value)} {_short_repr(value)}"
    elif callable(value):
        line = f"{name}: {kind}"
    else:
        line = f"{name}: {kind} {_short_repr(value)}"
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def summarize_namespace(ns: dict[str, Any], hidden: set[str] | None = None) -> str:
    """The user's variables, one line each, bounded in count and size."""
    hidden = hidden or set()
    lines: list[str] = []
    total = 0
    names = [n for n, v in list(ns.items()) if not _skip(n, v, hidden)]
    for name in names[:MAX_NAMES]:
        line = describe(name, ns[name])
        if total + len(line) > MAX_CHARS:
            lines.append(f"... ({len(names) - len(lines)} more variables)")
            break
        lines.append(line)
        total += len(line) + 1
    else:
        if len(names) > MAX_NAMES:
            lines.append(f"... ({len(names) - MAX_NAMES} more variables)")
    return "\n".join(lines)
