"""Tool specs that fit the model's context window.

    specs = fit_specs(registry.specs(), window=4_000)

Every tool's JSON schema is sent with every request. With a few dozen tools that is thousands
of tokens: on a small window (a local 4K or 8K model) the specs alone would leave no room for
the conversation. When the full specs take more than ``share`` of the window, each description
is cut to its first sentence and parameter descriptions are dropped (names, types and required
fields stay, so every call stays valid). If even that is too much, the ``optional`` tools
(planning aids such as the task and subagent tools) are left out of the request.
Pure functions over plain data.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Collection
from typing import Any

from .tokens import estimate_tools

#: Share of the context window the full tool specs may take before they are shortened.
SPEC_SHARE = 0.3

_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(\s|$)", re.S)


def first_sentence(text: str, limit: int = 160) -> str:
    """The first sentence of a description (its first line at most), cut to ``limit``."""
    line = (text or "").strip().split("\n", 1)[0]
    m = _FIRST_SENTENCE.match(line)
    return (m.group(1) if m else line)[:limit]


def compact_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """One tool spec with a one-sentence description and no parameter descriptions."""
    out = copy.deepcopy(spec)
    fn = out.get("function") or {}
    fn["description"] = first_sentence(str(fn.get("description") or ""))
    for prop in (fn.get("parameters") or {}).get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("description", None)
    return out


def fit_specs(
    specs: list[dict[str, Any]],
    window: int,
    share: float = SPEC_SHARE,
    optional: Collection[str] = (),
) -> list[dict[str, Any]]:
    """``specs`` as they are, or shortened when they would take more than ``share`` of
    ``window`` tokens (and without the ``optional`` tools if still too long)."""
    if window <= 0 or estimate_tools(specs) <= window * share:
        return specs
    short = [compact_spec(s) for s in specs]
    if optional and estimate_tools(short) > window * share:
        short = [s for s in short if (s.get("function") or {}).get("name") not in optional]
    return short
