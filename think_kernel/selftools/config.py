"""Settings of the tools the agent writes for itself (``c.SelfToolsConfig.*``).

Whether a person must approve each tool file is ``c.ThinkConfig.trust_workspace_tools``: it
sits with the approval policy, which it overrides.
"""

from __future__ import annotations

from traitlets import Bool, Float, Int
from traitlets.config import Configurable


class SelfToolsConfig(Configurable):
    """Where self-written tools are read from, how much of them, and how long a call runs."""

    enabled = Bool(
        True,
        config=True,
        help="Load tools from <workspace>/.think/tools/*.py (each file once a person approved "
        "it). Default: True.",
    )
    call_timeout = Float(
        60.0,
        config=True,
        help="Seconds one call of a self-written tool may run in the sandbox before it is "
        "stopped (bounded by the sandbox's max_timeout). Default: 60.",
    )
    max_files = Int(
        50,
        config=True,
        help="Tool files read from .think/tools; the rest are refused. Default: 50.",
    )
    max_file_bytes = Int(
        128 * 1024,
        config=True,
        help="Bytes of one tool file; a larger one is refused. Default: 131072.",
    )
