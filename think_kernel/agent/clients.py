"""The model client of the endpoint in force, rebuilt only when the endpoint changes.

    clients = ModelClients(config, injected=None)
    model = clients.get(endpoint, props)    # NotConfigured when no endpoint is set up
    await clients.aclose()

A session's ``base_url`` prop (the sidebar's endpoint setting) points it elsewhere; the key saved
with the setup card goes only to the URL it was saved with. An injected client (a test's, an
embedder's) is used as long as no other URL is asked for.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..config import NotConfigured
from .model import ModelClient, OpenAIModel

if TYPE_CHECKING:
    from ..config import ThinkConfig
    from ..endpoint import Endpoint


class ModelClients:
    """Holds the current client; the one it replaces is closed in passing."""

    def __init__(self, config: ThinkConfig, injected: ModelClient | None = None) -> None:
        self.config = config
        self.client: ModelClient | None = injected
        self.injected = injected is not None
        self._url: str | None = None
        self._key: tuple[str, str | None] | None = None
        self._closing: set[asyncio.Future[None]] = set()

    def get(self, endpoint: Endpoint, props: dict[str, Any]) -> ModelClient:
        """The client for the endpoint in force (or the session's ``base_url``)."""
        url = props.get("base_url") or None
        if self.injected and self.client is not None and (url is None or url == self._url):
            return self.client
        if url is None:
            if not endpoint.configured:
                raise NotConfigured()
            key, base = endpoint.api_key, endpoint.base_url
        else:
            key = endpoint.api_key if endpoint.base_url == url else self.config.api_key
            base = url
        # Local servers accept any key; send one anyway (some proxies insist).
        wanted = (key or "not-needed", base)
        if self.client is not None and self._key == wanted:
            return self.client
        if isinstance(self.client, OpenAIModel):  # the old endpoint's pool, closed in passing
            task = asyncio.ensure_future(self.client.aclose())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        self.client = OpenAIModel(wanted[0], base, timeout=self.config.request_timeout)
        self.injected = False
        self._url = url
        self._key = wanted
        return self.client

    async def aclose(self) -> None:
        """Close the client if it is ours (its connection pool)."""
        if isinstance(self.client, OpenAIModel):
            await self.client.aclose()
            self.client = None
