"""Settings of agent types (``c.AgentsConfig.*``)."""

from __future__ import annotations

from traitlets import Bool, Unicode
from traitlets.config import Configurable


class AgentsConfig(Configurable):
    """Which agent type a session starts with, and whether workspace types need a review."""

    default_agent = Unicode(
        "general",
        config=True,
        help="The agent type of a session that chose none (a chat's picker, %think_agent or "
        "the 'agent' of POST /api/think/sessions choose another). Default: 'general'.",
    )
    trust_workspace_agents = Bool(
        False,
        config=True,
        help="Use agent types of <workspace>/.think/agents without a person's approval of "
        "each new or changed file. Sandboxed code can write the workspace, so with this set "
        "a prompt-injected page can leave an agent type (instructions, a looser approval "
        "policy) for later sessions. Default: False.",
    )
