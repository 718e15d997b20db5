"""A session's way to its models: the endpoint in force, its client, the model of each role.

    access = ModelAccess(config, named=layers.named_model, injected=None)
    await access.refresh(store)          # the setup card's saved endpoint, else config/env
    model = access.client(props)         # NotConfigured when no endpoint is set up
    access.roles.model_name(props, "fast")
    caller = await access.caller(store, session_id, props)   # asks by role (vision, titles)
    await access.aclose()

The endpoint is read again before every request, so a choice made on the setup card reaches
kernels that are already running; its client is rebuilt only when the endpoint changes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..endpoint import SETTING, Endpoint, resolve
from .calls import ModelCaller
from .clients import ModelClients
from .roles import ModelRoles, Named

if TYPE_CHECKING:
    from ..config import ThinkConfig
    from ..store import Store
    from .model import ModelClient

log = logging.getLogger(__name__)


class ModelAccess:
    """The endpoint in force, the client for it, and the session's roles."""

    def __init__(
        self, config: ThinkConfig, *, named: Named, injected: ModelClient | None = None
    ) -> None:
        self.config = config
        self.clients = ModelClients(config, injected)
        #: Config and environment until the store says otherwise (see :meth:`refresh`).
        self.endpoint: Endpoint = resolve(config)
        self.roles = ModelRoles(config, named=named, endpoint=lambda: self.endpoint)

    async def refresh(self, store: Store | None) -> Endpoint:
        """Re-read the endpoint saved from the setup card (cheap: one indexed row)."""
        saved = None
        if store is not None:
            try:
                saved = await store.get_setting(SETTING)
            except Exception:  # an old store without the table: config/env apply
                log.debug("no saved endpoint", exc_info=True)
        self.endpoint = resolve(self.config, saved)
        return self.endpoint

    def client(self, props: dict[str, Any]) -> ModelClient:
        """The model client of the endpoint in force (see ``ModelClients.get``)."""
        return self.clients.get(self.endpoint, props)

    def prewarm(self) -> None:
        """Build the default client now, and load what its first request needs (call it on
        the event loop)."""
        try:
            model = self.client({})
            warm = getattr(model, "warm", None)
            if warm is not None:
                warm()
        except Exception:  # no key yet: the first run says so
            log.debug("model client not built ahead", exc_info=True)

    async def caller(self, store: Store, session_id: str, props: dict[str, Any]) -> ModelCaller:
        """A caller that asks the model of a role, with the endpoint read again first."""
        await self.refresh(store)
        return self.roles.caller(self.client(props), store, session_id, props)

    async def aclose(self) -> None:
        """Close the client (and any it replaced)."""
        await self.clients.aclose()
