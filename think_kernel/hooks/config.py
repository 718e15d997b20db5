"""Settings of lifecycle hooks (``c.HooksConfig.*``)."""

from __future__ import annotations

from traitlets import Float
from traitlets.config import Configurable


class HooksConfig(Configurable):
    """How long a hook may take before it is skipped."""

    hook_timeout = Float(
        5.0,
        config=True,
        help="Seconds one call of a lifecycle hook may take (a hook's own 'timeout' "
        "attribute overrides it); past it the hook is skipped for that call, a warning is "
        "logged and the action log records it, and the run goes on. Default: 5.0.",
    )
