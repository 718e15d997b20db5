"""Human in the loop: which calls need approval, the durable wait, the decision.

Pure core: :mod:`.policy` (which calls ask) and :mod:`.describe` (summary and diff); the
store side: :mod:`.record` (first decision wins, logged once); the agent side: :mod:`.gate`.
"""

from .gate import ApprovalGate, ApprovalSuperseded, Decision
from .policy import MODES, Policy, PolicyError, Rule
from .record import decide, decision_record, local_user

__all__ = [
    "MODES",
    "ApprovalGate",
    "ApprovalSuperseded",
    "Decision",
    "Policy",
    "PolicyError",
    "Rule",
    "decide",
    "decision_record",
    "local_user",
]
