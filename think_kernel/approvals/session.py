"""One session's approvals: its policy, the tools that ask, and its decisions.

    approvals = SessionApprovals(config, tools, runtime)    # runtime: its props
    gate = approvals.make_gate(store)           # what the agent loop asks before each call
    await approvals.resolve(gate, approval_id, {"local": True, "decision": "approve"})

The policy is the configuration's, then the session's ``approval`` prop; "always allow this
tool" is stored in that prop too, so it lasts as long as the session.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..questions.spec import BadAnswer, answer_record
from .gate import ApprovalGate
from .policy import Policy
from .record import decision_record, local_user

if TYPE_CHECKING:
    from ..config import ThinkConfig
    from ..store import Store
    from ..tools.base import ToolRegistry


class Props(Protocol):
    """A session's options (the "props" layer; the runtime is one): read them, change some."""

    async def props(self) -> dict[str, Any]:
        """The session's options."""
        ...

    async def set_props(self, **changes: Any) -> dict[str, Any]:
        """Change options (None removes one); returns them all."""
        ...


class SessionApprovals:
    """Which calls of a session ask, and what its people decided."""

    def __init__(
        self,
        config: ThinkConfig,
        tools: ToolRegistry,
        session: Props,
        *,
        agent_policy: Callable[[dict[str, Any]], str] = lambda props: "",
    ) -> None:
        self.config = config
        self.tools = tools
        self.session = session
        #: The mode the session's agent type sets ("" for none): it replaces the config's.
        self.agent_policy = agent_policy

    def make_gate(self, store: Store) -> ApprovalGate:
        """The gate the agent loop asks before each tool call."""
        return ApprovalGate(
            store,
            policy=self.policy,
            known=self.known_tools,
            destructive=self.destructive_tools,
            timeout=lambda: float(self.config.approval_timeout),
            question_timeout=lambda: float(self.config.question_timeout),
            on_always=self.always_allow,
        )

    async def policy(self, mode: str = "") -> Policy:
        """The approval policy in force: config, the session's agent type (or ``mode``: a
        subagent's type), then the session's ``approval`` prop."""
        props = await self.session.props()
        return Policy.from_settings(
            mode or self.agent_policy(props) or self.config.approval_policy,
            self.config.approval_rules,
            props,
            kernel_exec=self.config.kernel_exec,
        )

    def known_tools(self) -> set[str]:
        """Tools that never ask by default mode: core ones and those marked read-only."""
        known = set(self.tools.core)
        known.update(name for name, tool in self.tools.tools.items() if tool.read_only)
        return known

    def destructive_tools(self) -> set[str]:
        """Tools their source marks destructive (MCP ``destructiveHint``): they ask under the
        default policy even when "always allowed" in the session."""
        return {name for name, tool in self.tools.tools.items() if tool.destructive}

    async def always_allow(self, tool: str) -> None:
        """ "Always allow this tool for this session" (stored with the session)."""
        approval = dict((await self.session.props()).get("approval") or {})
        always = list(approval.get("always") or [])
        if tool not in always:
            approval["always"] = [*always, tool]
            await self.session.set_props(approval=approval)

    async def resolve(
        self, gate: ApprovalGate | None, approval_id: Any, frame: dict[str, Any]
    ) -> bool:
        """A decision: from the server link (already stored there: read it now) or, with
        ``frame["local"]``, made here (the cell's buttons). False if another came first."""
        if gate is None or not isinstance(approval_id, str):
            return False
        if not frame.get("local"):
            gate.wake(approval_id)
            return True
        if "answer" in frame:  # the cell's question card (see think_kernel.questions)
            return await self._answer(gate, approval_id, frame)
        record = decision_record(
            str(frame.get("decision")),
            input=frame.get("input") if isinstance(frame.get("input"), dict) else None,
            reason=str(frame.get("reason") or ""),
            always=bool(frame.get("always")),
            source=str(frame.get("source") or "notebook"),
            user=str(frame.get("user") or local_user()),
        )
        if frame.get("user_id"):  # the tab that clicked tells its own decisions by it
            record["user_id"] = str(frame["user_id"])[:200]
        return await gate.resolve(approval_id, record)

    async def _answer(self, gate: ApprovalGate, question_id: str, frame: dict[str, Any]) -> bool:
        row = await gate.store.get_approval(question_id)
        if row is None or row.get("kind") != "question" or row["status"] != "pending":
            return False
        source = str(frame.get("source") or "notebook")
        try:
            user = str(frame.get("user") or local_user())
            record = answer_record(row, frame.get("answer"), source=source, user=user)
        except BadAnswer:
            return False
        if frame.get("user_id"):  # the tab that clicked tells its own answers by it
            record["user_id"] = str(frame["user_id"])[:200]
        return await gate.resolve(question_id, record)
