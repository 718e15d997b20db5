"""The model endpoint of the setup card: ``/api/think/model`` and ``/api/think/model/test``.

``GET`` says whether a model is configured (and which URL and model, never the key);
``PUT {"base_url", "api_key"?, "model"}`` saves it in the store for this user's server;
``DELETE`` forgets it (back to the environment); ``POST .../test {"base_url", "api_key"?}``
asks the endpoint for its models. Kernels read the saved endpoint before every request
(:mod:`think_kernel.endpoint`), so nothing restarts.

Where the key lives: the store (``settings`` table), in the store folder outside the
workspace, 0700, which sandboxed code, the file tools and the loopback cannot reach.
It is never sent back to a browser (only its last four characters), never put in a kernel's
environment, and never written to a notebook.

The test request is server-side: the Jupyter server fetches ``{base_url}/models`` for a URL
the authenticated user typed. That user can already run code on this server (kernels,
terminals), so the request grants nothing new; still, it answers only with model ids (never
the response body), follows no redirects, and sends the saved key only to the URL it was
saved with (a new URL needs its key typed in), so the route cannot carry the key elsewhere.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jupyter_core.paths import jupyter_config_path
from jupyter_server.auth.decorator import authorized
from tornado import web
from traitlets.config import Config, PyFileConfigLoader

from think_kernel.config import ThinkConfig
from think_kernel.endpoint import OPENAI_URL, SETTING, Endpoint, public, resolve, saved_endpoint

from .base import ThinkHandler, field

log = logging.getLogger(__name__)
MAX_MODELS = 500
TEST_TIMEOUT = 10.0


def kernel_config() -> ThinkConfig:
    """The ThinkConfig kernels get: environment plus ``think_kernel_config.py`` files."""
    config = Config()
    for folder in reversed(jupyter_config_path()):  # the user's folder loads last and wins
        if not Path(folder, "think_kernel_config.py").is_file():
            continue
        try:
            config.merge(PyFileConfigLoader("think_kernel_config.py", path=folder).load_config())
        except Exception:  # a broken config file must not break the sidebar
            log.warning("Think: could not read %s/think_kernel_config.py", folder, exc_info=True)
    return ThinkConfig(config=config)


def check_url(url: str) -> str:
    """An http(s) URL with a host, without a trailing slash (400 otherwise)."""
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise web.HTTPError(
            400, "'base_url' must be an http(s) URL, e.g. http://localhost:11434/v1"
        )
    if parts.username or parts.password:
        raise web.HTTPError(400, "put the key in 'api_key', not in the URL")
    return url


def _text(body: dict[str, Any], name: str, limit: int) -> str:
    value = (field(body, name, str) or "").strip()
    if len(value) > limit:
        raise web.HTTPError(400, f"'{name}' is longer than {limit} characters")
    return value


class ModelHandler(ThinkHandler):
    """``GET`` the endpoint in force; ``PUT`` saves one; ``DELETE`` forgets it."""

    async def _current(self) -> tuple[Endpoint, Endpoint | None]:
        saved = await self.svc.store.get_setting(SETTING)
        return resolve(kernel_config(), saved), saved_endpoint(saved)

    @authorized
    async def get(self) -> None:
        """Configured or not, URL, model, where it was set; never the key."""
        ep, _ = await self._current()
        self.send(public(ep))

    @authorized
    async def put(self) -> None:
        """Save ``{"base_url", "api_key"?, "model"}``; an omitted key keeps the saved one
        only if the URL is unchanged (a key is never carried to another host)."""
        body = self.body()
        base_url = _text(body, "base_url", 500)
        base_url = check_url(base_url) if base_url else ""
        model = _text(body, "model", 200)
        if not model:
            raise web.HTTPError(400, "'model' is required (e.g. gpt-4o-mini or llama3.1)")
        key = _text(body, "api_key", 1000) if "api_key" in body else None
        _, saved = await self._current()
        if key is None:
            same = saved is not None and (saved.base_url or "") == base_url
            key = (saved.api_key or "") if same and saved else ""
        if not base_url and not key:
            raise web.HTTPError(400, "OpenAI needs an 'api_key'; a local server needs a 'base_url'")
        await self.svc.store.set_setting(
            SETTING, {"base_url": base_url, "api_key": key, "model": model}
        )
        self.log.info("Think: model endpoint saved (%s, %s)", base_url or "OpenAI", model)
        ep, _ = await self._current()
        self.send(public(ep))

    @authorized
    async def delete(self) -> None:
        """Forget the saved endpoint: the environment and config apply again."""
        await self.svc.store.set_setting(SETTING, None)
        ep, _ = await self._current()
        self.send(public(ep))


class ModelTestHandler(ThinkHandler):
    """``POST {"base_url", "api_key"?}``: the endpoint's models, or why it cannot be used."""

    @authorized
    async def post(self) -> None:
        """Ask ``{base_url}/models`` (server-side); answer ``{"ok", "models" | "error"}``."""
        body = self.body()
        raw = _text(body, "base_url", 500)
        base_url = check_url(raw) if raw else ""
        key = _text(body, "api_key", 1000) if "api_key" in body else ""
        if not key:
            # The saved (or configured) key, only for the URL it belongs to.
            ep = resolve(kernel_config(), await self.svc.store.get_setting(SETTING))
            if (ep.base_url or "") == base_url:
                key = ep.api_key or ""
        if not base_url and not key:
            self.send({"ok": False, "error": "OpenAI needs an API key."})
            return
        try:
            models = await list_models(base_url or None, key or "not-needed")
        except Exception as e:  # every failure is an answer for the card, not a 500
            self.send({"ok": False, "error": describe_failure(e, base_url)})
            return
        self.send({"ok": True, "models": models})


class ListFailure(Exception):
    """The endpoint answered the models request with an error status."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"HTTP {status}: {text[:200]}")
        self.status = status
        self.text = text


async def list_models(base_url: str | None, api_key: str) -> list[str]:
    """The model ids an OpenAI-compatible endpoint lists (sorted, at most MAX_MODELS)."""
    import httpx  # here: the server's start does not pay for it

    # Where the SDK would ask: the URL given, else OPENAI_BASE_URL, else OpenAI.
    root = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL).rstrip("/")
    headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
    # No redirects: the key must not be carried elsewhere (module docstring).
    async with httpx.AsyncClient(timeout=TEST_TIMEOUT, follow_redirects=False) as client:
        response = await client.get(f"{root}/models", headers=headers)
    if not 200 <= response.status_code < 300:
        raise ListFailure(response.status_code, response.text)
    body = response.json()
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise ValueError("the answer has no 'data' list of models")
    ids: list[str] = []
    for model in data[:MAX_MODELS]:
        if isinstance(model, dict) and model.get("id"):
            ids.append(str(model["id"])[:200])
    return sorted(set(ids))


def describe_failure(error: Exception, base_url: str) -> str:
    """One sentence a user can act on."""
    import httpx

    where = base_url or "the OpenAI API"
    status = error.status if isinstance(error, ListFailure) else None
    if status == 401:
        return f"{where} refused the key (401): check the API key."
    if status == 403:
        return f"{where} denied access (403): check the key's permissions."
    if status == 404:
        return (
            f"{where} has no /models route (404): the base URL usually ends in /v1 "
            "(e.g. http://localhost:11434/v1)."
        )
    if isinstance(error, httpx.TimeoutException):
        return f"{where} did not answer within {TEST_TIMEOUT:.0f} s."
    if isinstance(error, httpx.TransportError):
        return f"cannot connect to {where}: is the server running and the URL right?"
    if isinstance(error, ListFailure):
        return f"{where} answered {error.status}: {error.text[:200]}"
    return f"{where} did not list models: {type(error).__name__}: {str(error)[:200]}"


def model_routes(base: str = "/api/think") -> list[tuple[str, type[ThinkHandler]]]:
    """URL patterns of the setup card's routes."""
    return [(f"{base}/model", ModelHandler), (f"{base}/model/test", ModelTestHandler)]
