"""What was loaded and what was refused, with why: shown by ``%think_status``, the sidebar
and ``GET /api/think/skills``.

    report = Report()
    report.loaded.append(Found("csv-tips", "workspace", ".think/skills/csv-tips/SKILL.md"))
    report.invalid.append(Problem("bad", "workspace", ".think/skills/bad/SKILL.md", "no name"))
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Found:
    """One file that was read: its name, where it came from and where it is."""

    name: str
    #: ``workspace``, ``user`` or ``package:<distribution>``.
    source: str
    path: str
    #: A short note (a description, or "cut to N characters").
    note: str = ""


@dataclass(frozen=True)
class Problem:
    """One file that was refused, and why (a person can fix it from the reason)."""

    name: str
    source: str
    path: str
    reason: str


@dataclass(frozen=True)
class Review:
    """A valid workspace skill not offered until a person approves this content of it."""

    name: str
    source: str
    path: str
    reason: str
    sha256: str


@dataclass
class Report:
    """The files of one kind a request used, and the ones refused."""

    loaded: list[Found] = field(default_factory=list)
    invalid: list[Problem] = field(default_factory=list)
    #: Skills waiting for a person's review (skills only).
    review: list[Review] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The wire form: ``{"loaded": [...], "invalid": [...], "review": [...]}``."""
        return {
            "loaded": [asdict(f) for f in self.loaded],
            "invalid": [asdict(p) for p in self.invalid],
            "review": [asdict(r) for r in self.review],
        }

    def lines(self) -> list[str]:
        """Plain text lines, one per file, for ``%think_status``."""
        out = [f"{f.name} ({f.source}: {f.path})" for f in self.loaded]
        out += [f"{p.name} ({p.source}: {p.path}): invalid: {p.reason}" for p in self.invalid]
        out += [f"{r.name} ({r.source}: {r.path}): {r.reason}" for r in self.review]
        return out
