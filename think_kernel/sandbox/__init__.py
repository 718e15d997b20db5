"""Per-cell sandbox: every piece of code the agent (or a ``%%python`` / ``%%bash`` cell) runs
executes here, never in the kernel process (docs/architecture.md#sandbox-tiers).

Public API::

    from think_kernel.sandbox import Sandbox, SandboxConfig, detect_tier

    sandbox = await Sandbox.create(workspace_root, session_id, SandboxConfig(timeout=30))
    # or in two steps: Sandbox.prepare(...) takes the uid, cgroup and ACLs, start() the zygote
    await sandbox.preload()                               # numpy & co now (else: first Python run)
    print(sandbox.tier.description)                       # for the banner / %think_status
    await sandbox.serve_loopback(handler)                 # async handler(tool, args) -> ToolOutput
    r = await sandbox.run_python("x = 1", on_output=cb)   # warm worker: state persists
    r = await sandbox.run_python("print(x)", fresh=True)  # isolated run from the zygote
    r = await sandbox.run_bash("ls | wc -l", timeout=10)
    await sandbox.interrupt()                             # kill running process groups
    await sandbox.close()

``cb(stream, text)`` ("stdout" / "stderr") may be sync or async and is called while the code
runs. Results are :class:`ExecResult`; ``error_category`` is one of ``syntax``, ``runtime``,
``timeout``, ``memory``, ``killed``, ``disk``. ``sandbox.limits()`` lists every limit in force
and its mechanism (per-session uid and cgroup, write budget). Tiers (:class:`Tier`):
1 bubblewrap, 2 Landlock + seccomp, 3 rlimits only (every result then carries a warning).
``SandboxConfig.required_tier`` refuses weaker tiers; ``force_tier`` picks a weaker one (tests).

Inside the sandbox, ``import think`` gives ``read_file``, ``write_file``, ``list_files`` and
``fetch``, served by the loopback handler (see :mod:`.loopback`).
"""

from .config import SandboxConfig
from .limits import LimitRow, describe_limits, markdown_table
from .loopback import LOOPBACK_TOOLS, LoopbackHandler, LoopbackServer
from .result import ERROR_CATEGORIES, ExecResult
from .sandbox import Sandbox, SandboxError
from .tiers import TIER3_WARNING, Tier, available_tiers, detect_tier

__all__ = [
    "ERROR_CATEGORIES",
    "LOOPBACK_TOOLS",
    "LimitRow",
    "TIER3_WARNING",
    "ExecResult",
    "LoopbackHandler",
    "LoopbackServer",
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "Tier",
    "available_tiers",
    "describe_limits",
    "detect_tier",
    "markdown_table",
]
