"""What we know of common models: context windows and prices (pure data and lookups).

    window_for("gpt-4o-mini-2024-07-18", {})          # -> 128000
    window_for("ollama/llama3.1:8b", {})               # -> 131072
    cost_of("gpt-4o-mini", 1000, 200, 0, {})           # -> 0.00027 (USD)

Names match by the longest known prefix after dropping a provider prefix (``openai/``) and an
Ollama tag (``:8b``), so dated snapshots find their family. Users add or override entries
with ``c.ThinkConfig.context_windows`` and ``c.ThinkConfig.prices``; ``THINK_CONTEXT_WINDOW``
overrides the window of every model. Prices are list prices in USD per million tokens as
published by the provider when this table was written: an estimate, not a bill.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Used when nothing matches. Local servers often run smaller windows: a context-length error
# from the endpoint makes the loop compact and retry, and learns the real size when it says so.
DEFAULT_WINDOW = 32_768

CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "gpt-oss": 131_072,
    "claude": 200_000,
    "gemini": 1_048_576,
    "llama3": 8_192,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "llama4": 131_072,
    "qwen2.5": 32_768,
    "qwen2.5-coder": 32_768,
    "qwen3": 40_960,
    "mistral": 32_768,
    "mistral-large": 131_072,
    "mixtral": 32_768,
    "codestral": 262_144,
    "deepseek": 65_536,
    "deepseek-v3": 131_072,
    "deepseek-r1": 131_072,
    "gemma2": 8_192,
    "gemma3": 131_072,
    "phi3": 4_096,
    "phi4": 16_384,
}

# USD per million tokens: (input, cached input, output).
PRICES: dict[str, tuple[float, float, float]] = {
    "gpt-5": (1.25, 0.125, 10.0),
    "gpt-5-mini": (0.25, 0.025, 2.0),
    "gpt-5-nano": (0.05, 0.005, 0.40),
    "gpt-4.1": (2.0, 0.50, 8.0),
    "gpt-4.1-mini": (0.40, 0.10, 1.60),
    "gpt-4.1-nano": (0.10, 0.025, 0.40),
    "gpt-4o": (2.50, 1.25, 10.0),
    "gpt-4o-mini": (0.15, 0.075, 0.60),
    "o1": (15.0, 7.50, 60.0),
    "o3": (2.0, 0.50, 8.0),
    "o3-mini": (1.10, 0.55, 4.40),
    "o4-mini": (1.10, 0.275, 4.40),
}


def normalize(model: str) -> str:
    """``openai/gpt-4o`` -> ``gpt-4o``; ``llama3.1:8b`` -> ``llama3.1``; lower case."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    return name.split(":", 1)[0]


def lookup(table: Mapping[str, Any], model: str) -> Any:
    """The entry for the longest prefix of the model name (None if none matches)."""
    name = normalize(model)
    best: str | None = None
    for key in table:
        k = key.lower()
        if name == k or (name.startswith(k) and name[len(k)] in "-_.@ "):
            if best is None or len(k) > len(best):
                best = key
    return None if best is None else table[best]


def window_for(model: str, overrides: Mapping[str, int], every: int = 0) -> int:
    """The context window of a model in tokens: ``every`` > overrides > table > default."""
    if every > 0:
        return every
    found = lookup({**CONTEXT_WINDOWS, **overrides}, model)
    return int(found) if found else DEFAULT_WINDOW


def price_for(model: str, overrides: Mapping[str, Any]) -> tuple[float, float, float] | None:
    """(input, cached input, output) USD per million tokens, or None when unknown."""
    found = lookup({**PRICES, **overrides}, model)
    if found is None:
        return None
    values = [float(v) for v in found]
    if len(values) == 2:  # [input, output]: cached input billed as input
        return values[0], values[0], values[1]
    if len(values) != 3:
        return None
    return values[0], values[1], values[2]


def cost_of(
    model: str, tokens_in: int, tokens_out: int, tokens_cached: int, overrides: Mapping[str, Any]
) -> float | None:
    """Estimated USD for one call (None when the model has no price)."""
    price = price_for(model, overrides)
    if price is None:
        return None
    p_in, p_cached, p_out = price
    cached = min(max(tokens_cached, 0), max(tokens_in, 0))
    fresh = max(tokens_in, 0) - cached
    return (fresh * p_in + cached * p_cached + max(tokens_out, 0) * p_out) / 1_000_000
