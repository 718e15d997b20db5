"""Containment probes: attacks on the sandbox, tried for real on this machine, for
``jupyter think doctor`` and ``%think_doctor``::

    report = await run_probes(Tier.BUBBLEWRAP, SandboxConfig())
    print(report.markdown())

:mod:`.run` runs them all on one tier; the probes are grouped by what they attack:
:mod:`.escapes` (out of the sandbox), :mod:`.sessions` (between sessions, and the limits),
:mod:`.pyenv` (the Python environment sandboxed code runs), :mod:`.planted` (what it could
leave in ``.think/`` for later sessions).
"""

from .pyenv import python_env, python_env_writes
from .report import Probe, Report
from .run import run_probes

__all__ = ["Probe", "Report", "python_env", "python_env_writes", "run_probes"]
