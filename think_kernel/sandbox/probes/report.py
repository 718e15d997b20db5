"""A probe's outcome, and the report of every probe of one tier."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..limits import LimitRow, markdown_table
from ..tiers import Tier


@dataclass
class Probe:
    """One attack class and its outcome."""

    attack: str
    contained: bool
    detail: str


@dataclass
class Report:
    """Every probe of one tier, and the limits a session would run under."""

    tier: Tier
    probes: list[Probe] = field(default_factory=list)
    limits: list[LimitRow] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def all_contained(self) -> bool:
        """True when every attack was contained."""
        return all(p.contained for p in self.probes)

    def markdown(self) -> str:
        """The report as Markdown: a probe table, then the limits table."""
        lines = [f"**{self.tier.description}**", "", "| attack | contained | detail |",
                 "|---|---|---|"]  # fmt: skip
        for p in self.probes:
            mark = "yes" if p.contained else "**NO**"
            lines.append(f"| {p.attack} | {mark} | {p.detail.replace('|', '/')} |")
        lines += ["", markdown_table(self.limits)]
        return "\n".join(lines)
