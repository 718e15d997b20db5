"""A notebook kernel's variables, read without side effects: the probe that runs in the kernel
(:mod:`.probe`), the server side that asks the kernel (:mod:`.inspector`), and its REST route
and kernel-link RPC (:mod:`.routes`)."""

from .inspector import InspectError, VariableInspector, VariableLimits
from .routes import register_variable_rpc, variables_routes

__all__ = [
    "InspectError",
    "VariableInspector",
    "VariableLimits",
    "register_variable_rpc",
    "variables_routes",
]
