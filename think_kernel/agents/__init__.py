"""Named agent types: Markdown files with YAML that say which tools, model and approval
policy an agent has, with its instructions as the body.

Found in ``<workspace>/.think/agents/``, the user-level Think folder's ``agents/``, packages'
``think_kernel.agents`` entry points and the built-in ones (``general``, ``explorer``,
``reviewer``) (:mod:`.library`); parsed and checked by :mod:`.agenttype`; a session's choice
and what it changes in :mod:`.session`; the tool limits, enforced at the call, in
:mod:`.limits`.
"""

from .agenttype import AgentType, InvalidAgentType, ToolLimits, parse_agent_type
from .config import AgentsConfig
from .library import AgentLibrary, AgentScan
from .limits import LimitedTools, limited
from .session import SessionAgents, UnknownAgentType, open_agents

__all__ = [
    "AgentLibrary",
    "AgentScan",
    "AgentType",
    "AgentsConfig",
    "InvalidAgentType",
    "LimitedTools",
    "SessionAgents",
    "ToolLimits",
    "UnknownAgentType",
    "limited",
    "open_agents",
    "parse_agent_type",
]
