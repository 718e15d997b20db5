"""Which model each role of a session uses, and how large each model's context window is.

    roles = ModelRoles(config, named=layers.named_model, endpoint=lambda: rt.endpoint)
    roles.model_name(props, "summarizer")   # named by a layer, else its fallback's
    roles.context_window("gpt-4o-mini")     # learned from the endpoint, else configured

Roles (:data:`~think_kernel.agent.calls.ROLES`): ``primary`` runs the steps, ``fast``
subagents and titles, ``summarizer`` compactions, ``vision`` requests with images.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .calls import FALLBACK, ROLES, ModelCaller
from .catalog import window_for
from .tokens import Calibration

if TYPE_CHECKING:
    from ..config import ThinkConfig
    from ..endpoint import Endpoint
    from .model import ModelClient
    from .stores import RunLog

Named = Callable[[dict[str, Any], str], str]
"""(props, role) -> the model a layer names for the role, or ""."""


class ModelRoles:
    """The models of a session's roles and what the endpoint taught us about them."""

    def __init__(
        self, config: ThinkConfig, *, named: Named, endpoint: Callable[[], Endpoint]
    ) -> None:
        self.config = config
        self.named = named
        self.endpoint = endpoint
        # Shared by every run: token counts and context windows as the endpoint reported them.
        self.calibration = Calibration()
        self.learned_windows: dict[str, int] = {}

    def model_name(self, props: dict[str, Any], role: str = "primary") -> str:
        """The model of a role: props > subclass > extension > config > default, where a
        role nothing names follows its fallback (summarizer -> fast -> primary, vision ->
        primary)."""
        chosen = self.named(props, role)
        if not chosen:
            chosen = self.endpoint().model if role == "primary" else self.config.model_for(role)
        if chosen:
            return chosen
        if role in FALLBACK:
            return self.model_name(props, FALLBACK[role])
        return str(self.config.primary_model)

    def role_models(self, props: dict[str, Any]) -> dict[str, str]:
        """Every role's model for this session."""
        return {role: self.model_name(props, role) for role in ROLES}

    def configured_window(self, model: str) -> int:
        """The context window config or the table of common models gives a model."""
        return window_for(model, self.config.context_windows, self.config.context_window)

    def context_window(self, model: str) -> int:
        """The context window (tokens) of a model: learned from the endpoint, else
        ``THINK_CONTEXT_WINDOW`` / config, else the table of common models."""
        configured = self.configured_window(model)
        learned = self.learned_windows.get(model)
        return min(learned, configured) if learned else configured

    def caller(
        self, client: ModelClient, store: RunLog, session_id: str, props: dict[str, Any]
    ) -> ModelCaller:
        """A model caller of the session's roles (usage recorded in ``store``)."""
        return ModelCaller(
            client,
            store,
            session_id,
            self.role_models(props),
            prices=self.config.prices,
            calibration=self.calibration,
            windows=self.configured_window,
            learned=self.learned_windows,
        )

    def agent_settings(self, props: dict[str, Any]) -> dict[str, Any]:
        """The agent loop's model settings: roles, windows, prices, what was learned."""
        return {
            "model_name": self.model_name(props),
            "models": self.role_models(props),
            "windows": self.configured_window,
            "prices": self.config.prices,
            "calibration": self.calibration,
            "learned_windows": self.learned_windows,
        }
