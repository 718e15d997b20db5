"""Which model endpoint a request uses: the one saved from the setup card, else config/env.

A user sets the endpoint in one step: in the environment (``OPENAI_API_KEY``,
``OPENAI_BASE_URL``, ``THINK_MODEL``) or in the chat sidebar's setup card, which saves it in
the store (outside the workspace; see :mod:`think_kernel.store.settings`). Every request
resolves it again, so a change from the card applies to running kernels at their next
request, without a restart:

    saved = await store.get_setting(SETTING)     # what the setup card saved, or None
    ep = resolve(config, saved)                  # Endpoint(base_url, api_key, model, source)
    public(ep)                                   # what a browser may see: never the key

A saved endpoint wins over the environment and config: it is the user's latest explicit
choice, made in the product. ``DELETE /api/think/model`` goes back to the environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The store setting the setup card writes.
SETTING = "model_endpoint"
#: Where requests go when no base URL is set (the openai SDK's default).
OPENAI_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible endpoint: URL (None = OpenAI), key, primary model, and where
    it was set (``saved``: the setup card; ``environment``: env or config; ``""``: nowhere)."""

    base_url: str | None
    api_key: str | None
    model: str
    source: str

    @property
    def configured(self) -> bool:
        """Whether a request can be sent (a key, or a URL of a server that needs none)."""
        return bool(self.base_url or self.api_key)


def saved_endpoint(value: Any) -> Endpoint | None:
    """The endpoint a setup-card setting describes, or None (unset or malformed)."""
    if not isinstance(value, dict):
        return None

    def text(name: str) -> str:
        v = value.get(name)
        return v.strip() if isinstance(v, str) else ""

    ep = Endpoint(text("base_url") or None, text("api_key") or None, text("model"), "saved")
    return ep if ep.configured else None


def resolve(config: Any, saved: Any = None) -> Endpoint:
    """The endpoint in force: the saved one, else config/environment (``ThinkConfig``)."""
    ep = saved_endpoint(saved)
    if ep is not None:
        return ep if ep.model else _with_model(ep, str(config.primary_model))
    base, key = config.base_url or None, config.api_key or None
    return Endpoint(base, key, str(config.primary_model), "environment" if base or key else "")


def _with_model(ep: Endpoint, model: str) -> Endpoint:
    return Endpoint(ep.base_url, ep.api_key, model, ep.source)


def key_hint(key: str | None) -> str:
    """Enough of a key to recognise it (its last 4 characters), never enough to use it."""
    if not key:
        return ""
    return f"…{key[-4:]}" if len(key) >= 12 else "set"


def public(ep: Endpoint) -> dict[str, Any]:
    """The endpoint as the browser sees it: everything but the key."""
    return {
        "configured": ep.configured,
        "source": ep.source,
        "base_url": ep.base_url or "",
        "effective_url": ep.base_url or OPENAI_URL,
        "model": ep.model,
        "api_key_set": bool(ep.api_key),
        "api_key_hint": key_hint(ep.api_key),
    }
