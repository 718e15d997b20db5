"""Token estimates that work offline, calibrated by what the endpoint reports.

    estimate_text("def f(x):\\n    return x")        # -> 7 (cl100k_base says 7)
    cal = Calibration()
    cal.observe("gpt-4o", estimated=900, reported=1000)
    cal.scale("gpt-4o", 450)                          # -> ~500

No tokenizer file is downloaded (tiktoken fetches its BPE files at first use, and many Jupyter
machines have no network). The estimate splits text the way GPT byte-pair tokenizers pre-split
it (words with their leading space, up to three digits, punctuation runs, whitespace runs) and
weighs each piece with coefficients fitted against cl100k_base on code, prose, JSON, HTML, CSV,
shell output and non-English text: median error under 1 %, 90 % of samples within about -12 % /
+7 % (``bench/long_session.py`` prints the figures against a real tokenizer when one is
installed). Every model call then reports its real prompt size and :class:`Calibration` scales
later estimates for that model, so the error shrinks to what one message adds.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Any

# Roughly what OpenAI's chat format adds around each message and before the reply.
MESSAGE_OVERHEAD = 4
REPLY_OVERHEAD = 3
# An image part: gpt-4o bills 85 tokens (low detail) to ~1,100 (a 1024 px tile grid).
IMAGE_TOKENS = 1_100
# Past this many characters, estimate from evenly spaced samples (bounded cost per message).
SAMPLE_OVER = 65_536
_SAMPLES = 8
_SAMPLE_CHARS = 4_096

_L = r"[^\W\d_]"
# The shape of GPT-4's pre-tokenizer pattern, with ``re``'s classes instead of \p{L} / \p{N}.
_PIECES = re.compile(
    rf"'(?:[sdmtSDMT]|ll|ve|re)|[^\r\n\w]?{_L}+|\d{{1,3}}| ?[^\s\w]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s"
)
# Fitted weights (tokens per piece, or per character where named).
_W_SPACE = 0.90
_W_WORD = 1.02
_W_LONG_CHAR = 0.16  # each ASCII letter past the 7th in one word
_W_NONASCII_CHAR = 0.60  # each non-ASCII letter (CJK, Cyrillic, accents)
_W_NUMBER = 1.07
_W_PUNCT = 1.13


def _estimate_exact(text: str) -> float:
    total = 0.0
    for piece in _PIECES.findall(text):
        last = piece[-1]
        if piece.isspace():
            total += _W_SPACE
        elif last.isalpha() or last == "_":
            total += _W_WORD
            if piece.isascii():
                if len(piece) > 7:
                    total += _W_LONG_CHAR * (len(piece) - 7)
            else:
                total += _W_NONASCII_CHAR * sum(1 for ch in piece if ord(ch) > 127)
        elif last.isdigit():
            total += _W_NUMBER
        else:
            total += _W_PUNCT
    return total


# Estimates of texts seen before, by (hash, length): every run estimates its whole history
# again (and the system prompt and tool specs), which was most of a warm run's own time and
# grew with the session. No text is kept; a collision would only shift an estimate.
_SEEN: dict[tuple[int, int], int] = {}
_SEEN_MAX = 50_000
_SEEN_MIN_CHARS = 64  # shorter texts are estimated faster than they are looked up


def estimate_text(text: str) -> int:
    """Estimated tokens of a text (cl100k_base-like), in O(min(len, 64 K)) time."""
    if not text:
        return 0
    n = len(text)
    if n < _SEEN_MIN_CHARS:
        return _estimate(text, n)
    key = (hash(text), n)
    found = _SEEN.get(key)
    if found is None:
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.clear()
        found = _SEEN[key] = _estimate(text, n)
    return found


def _estimate(text: str, n: int) -> int:
    if n <= SAMPLE_OVER:
        return round(_estimate_exact(text))
    # A megabyte of output costs as much as 32 KB: sample evenly and scale.
    step = (n - _SAMPLE_CHARS) // (_SAMPLES - 1)
    sampled = sum(
        _estimate_exact(text[i * step : i * step + _SAMPLE_CHARS]) for i in range(_SAMPLES)
    )
    return round(sampled * n / (_SAMPLES * _SAMPLE_CHARS))


def estimate_content(content: Any) -> int:
    """Tokens of a message ``content``: a string or a list of text / image parts."""
    if content is None:
        return 0
    if isinstance(content, str):
        return estimate_text(content)
    total = 0
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, dict) and part.get("type") == "image_url":
            total += IMAGE_TOKENS
        elif isinstance(part, dict):
            total += estimate_text(str(part.get("text") or ""))
        else:
            total += estimate_text(str(part))
    return total


def estimate_message(message: dict[str, Any]) -> int:
    """Tokens of one OpenAI chat message, with the format's per-message overhead."""
    total = MESSAGE_OVERHEAD + estimate_content(message.get("content"))
    for call in message.get("tool_calls") or ():
        fn = call.get("function") or {}
        total += 3 + estimate_text(str(fn.get("name") or ""))
        total += estimate_text(str(fn.get("arguments") or ""))
    return total


def estimate_messages(messages: Iterable[dict[str, Any]]) -> int:
    """Tokens of a list of chat messages, including the reply's priming."""
    return REPLY_OVERHEAD + sum(estimate_message(m) for m in messages)


def estimate_tools(specs: list[dict[str, Any]]) -> int:
    """Tokens the tool specifications take in a request (their JSON, estimated)."""
    if not specs:
        return 0
    # A registry builds new spec dicts around the same name, description and parameters
    # objects for every request; JSON-encoding all of them twice a request is wasted work.
    # The key holds those parts (the parameters by identity, kept alive by the entry).
    key = tuple(spec_key(s) for s in specs)
    hit = _TOOL_ESTIMATES.get(key)
    if hit is None:
        hit = (_estimate_json(json.dumps(specs, separators=(",", ":"))), specs)
        if len(_TOOL_ESTIMATES) >= 32:
            _TOOL_ESTIMATES.pop(next(iter(_TOOL_ESTIMATES)))
        _TOOL_ESTIMATES[key] = hit
    return hit[0]


_TOOL_ESTIMATES: dict[tuple[Any, ...], tuple[int, list[dict[str, Any]]]] = {}


def spec_key(spec: dict[str, Any]) -> tuple[Any, ...]:
    """What identifies a tool spec's JSON across requests: its type, name, description and
    parameters object; ``(id(spec),)`` for a spec of another shape."""
    fn = spec.get("function")
    if not isinstance(fn, dict) or len(spec) != 2 or len(fn) != 3:
        return (id(spec),)  # not the usual shape: this very object (kept alive by the entry)
    return (spec.get("type"), fn.get("name"), fn.get("description"), id(fn.get("parameters")))


@functools.lru_cache(maxsize=32)
def _estimate_json(text: str) -> int:
    # The same specs go with every request (twice: fitting them, sizing the context); the
    # estimate walks every character, so a session's few spec sets are estimated once each.
    return estimate_text(text)


class Calibration:
    """Per model, the ratio of the prompt tokens the endpoint reported to our estimate.

    Smoothed (each report moves the ratio a third of the way) and clamped to [0.5, 3], so
    one odd report cannot make the estimate absurd.
    """

    def __init__(self) -> None:
        self.ratios: dict[str, float] = {}

    def ratio(self, model: str) -> float:
        """The current factor for a model (1.0 until it reported usage)."""
        return self.ratios.get(model, 1.0)

    def observe(self, model: str, estimated: int, reported: int) -> None:
        """Learn from one call: we estimated ``estimated``, the endpoint said ``reported``."""
        if estimated <= 0 or reported <= 0:
            return
        seen = reported / estimated
        old = self.ratios.get(model)
        new = seen if old is None else old + (seen - old) / 3
        self.ratios[model] = min(3.0, max(0.5, new))

    def scale(self, model: str, estimated: int) -> int:
        """An estimate corrected by what this model's endpoint reported so far."""
        return round(estimated * self.ratio(model))
