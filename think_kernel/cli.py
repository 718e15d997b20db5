"""``jupyter think``: command-line tools of Think for Jupyter.

    jupyter think doctor               # probe the sandbox tier sessions would use here
    jupyter think doctor --all-tiers   # every tier this machine can run
    jupyter think doctor --tier 2

``doctor`` checks that sandboxed code runs the kernel's Python (standard library, numpy,
pandas, matplotlib, ``python`` in bash), tries the attacks sandboxed code could make, for real
on this machine, and prints per tier which were contained (a row marked NO says what failed
and, where known, the fix), then the limits a session runs under. It reads
``c.SandboxConfig.*`` from ``think_kernel_config.py`` in the Jupyter config path, as the kernel
does. Exit status: 0 when every row was green on the tier(s) probed, 1 otherwise.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from jupyter_core.application import JupyterApp
from jupyter_core.paths import jupyter_config_path
from traitlets import Bool, Int
from traitlets.config import Application

from .sandbox import SandboxConfig, Tier, available_tiers
from .sandbox.probes import Report, run_probes


async def doctor(config: SandboxConfig, tiers: list[Tier], out: Any = sys.stdout) -> list[Report]:
    """Probe each tier in turn, printing progress to ``out`` (stderr-like) as it goes."""
    reports = []
    for tier in tiers:
        print(f"probing tier {int(tier)}...", file=out, flush=True)
        reports.append(await run_probes(tier, config))
    return reports


class DoctorApp(JupyterApp):
    """``jupyter think doctor``: run the sandbox containment probes on this machine."""

    name = "jupyter-think-doctor"
    description = "Try the sandbox's containment on this machine: tier, attacks, limits."
    all_tiers = Bool(
        False, config=True, help="Probe every tier this machine can run. Default: False."
    )
    tier = Int(
        0,
        min=0,
        max=3,
        config=True,
        help="Probe this tier (1, 2 or 3); 0 = the tier sessions would use. Default: 0.",
    )
    flags = {
        "all-tiers": ({"DoctorApp": {"all_tiers": True}}, "Probe every tier this machine runs.")
    }
    aliases = {"tier": "DoctorApp.tier"}
    classes = [SandboxConfig]

    def load_config_file(self, *args: Any, **kwargs: Any) -> None:
        """``think_kernel_config.py`` from the Jupyter path: the kernel's sandbox settings."""
        super().load_config_file(*args, **kwargs)
        paths = [p for p in jupyter_config_path() if Path(p).is_dir()]
        if paths:
            Application.load_config_file(self, "think_kernel_config.py", path=paths)

    def start(self) -> None:
        """Run the probes and print the report."""
        config = SandboxConfig(config=self.config)
        here = available_tiers(config.bwrap_path)
        if self.all_tiers:
            tiers = here
        elif self.tier or config.force_tier:
            tiers = [Tier(self.tier or config.force_tier)]
        else:
            tiers = [here[0]]
        missing = [t for t in tiers if t not in here]
        if missing:
            print(f"tier {int(missing[0])} cannot run on this machine", file=sys.stderr)
            self.exit(2)
        reports = asyncio.run(doctor(config, tiers, sys.stderr))
        print(f"Sandbox tiers this machine can run: {', '.join(str(int(t)) for t in here)}\n")
        for report in reports:
            print(report.markdown())
            print(f"\n({report.seconds:.1f} s)\n")
        failed = [p for r in reports for p in r.probes if not p.contained]
        if failed:
            # The rows marked NO say what failed and, where the sandbox knows it, the fix.
            print(f"NOT all green: {len(failed)} row(s) marked **NO**: "
                  + "; ".join(p.attack for p in failed))  # fmt: skip
        self.exit(0 if all(r.all_contained for r in reports) else 1)


class ThinkApp(JupyterApp):
    """``jupyter think``: Think for Jupyter's command-line tools."""

    name = "jupyter-think"
    description = "Think for Jupyter command-line tools."
    subcommands = {"doctor": (DoctorApp, DoctorApp.description)}

    def start(self) -> None:
        """Run the subcommand, or list them."""
        if self.subapp is None:
            print("usage: jupyter think doctor [--all-tiers | --tier=N]")
            print(f"subcommands: {', '.join(self.subcommands)}")
            self.exit(2)
        else:
            self.subapp.start()


main = ThinkApp.launch_instance
