"""What skills and project instructions add to building the system prompt, per request.

    python bench/skills.py [--quick]

Each request reads the AGENTS.md files and scans the skill folders again (a stat per skill;
a SKILL.md is re-read and hashed only when its mtime, size or inode changed), asks the store
about workspace skills no person decided on yet (none here: all 50 are approved, as in
steady use), checks each skill's approval in memory, then joins the prompt.
Measured in one run on two workspaces: one with no skills and no AGENTS.md (the baseline),
one with 50 workspace skills and an AGENTS.md; printed as medians (and p90) of the whole
prompt build, and the difference. The first scan of the 50 skills (every SKILL.md read and
parsed) is printed too: it is paid once per kernel, and again for each changed skill.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from think_kernel.agent.prompt import build_system_prompt  # noqa: E402
from think_kernel.skills.config import SkillsConfig  # noqa: E402
from think_kernel.skills.instructions import ProjectInstructions  # noqa: E402
from think_kernel.skills.library import SkillLibrary  # noqa: E402
from think_kernel.skills.session import SessionSkills  # noqa: E402
from think_kernel.skills.trust import SkillTrust, Verdict  # noqa: E402
from think_kernel.store import Store  # noqa: E402

SKILL = (
    """\
---
name: {name}
description: "{description}"
---
# {name}

Step one: read the data. Step two: check the columns. Step three: {name}.
"""
    + "More instructions for the model to follow when it loads this skill.\n" * 40
)


def workspace(base: Path, skills: int) -> SessionSkills:
    """A workspace with ``skills`` skills (and an AGENTS.md when there are any)."""
    root = base / f"ws-{skills}"
    (root / ".think" / "skills").mkdir(parents=True)
    for i in range(skills):
        name = f"skill-{i:02d}"
        folder = root / ".think" / "skills" / name
        folder.mkdir()
        description = f"Use for task family {i}: " + "what it covers and when to use it. " * 3
        (folder / "SKILL.md").write_text(SKILL.format(name=name, description=description))
    if skills:
        (root / "AGENTS.md").write_text("Use pandas; keep notebooks short.\n" * 20)
    config = SkillsConfig()
    empty = base / f"none-{skills}"
    empty.mkdir()
    trust = SkillTrust()  # a person approved every one of them
    for folder in (root / ".think" / "skills").iterdir():
        sha = hashlib.sha256((folder / "SKILL.md").read_bytes()).hexdigest()
        trust.note(f".think/skills/{folder.name}/SKILL.md", sha, Verdict(True))
    library = SkillLibrary(root, config, user_dir=empty / "skills", packages=list, trust=trust)
    return SessionSkills(library, ProjectInstructions(root, config, user_dir=empty), "")


def per_step(skills: SessionSkills, n: int, store: Store) -> list[float]:
    """Seconds of each of ``n`` prompt builds (what ``Runtime.run`` does before a request:
    the skills' trust check, then ``Runtime.system_prompt``)."""

    async def measure() -> list[float]:
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            await skills.check_trust(store)
            build_system_prompt("", "", skills.prompt())
            times.append(time.perf_counter() - t0)
        return times

    return asyncio.run(measure())


def show(label: str, times: list[float]) -> float:
    """Print the median and p90 in ms; return the median."""
    ms = sorted(t * 1000 for t in times)
    median = statistics.median(ms)
    p90 = ms[int(len(ms) * 0.9) - 1]
    print(f"{label:<44} median {median:7.3f} ms   p90 {p90:7.3f} ms   (n={len(ms)})")
    return median


def main() -> None:
    """Run the measurement and print it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    n = 200 if parser.parse_args().quick else 2000
    with tempfile.TemporaryDirectory() as tmp:
        store = asyncio.run(Store.open(Path(tmp) / "store" / "think.db"))
        none = workspace(Path(tmp), 0)
        fifty = workspace(Path(tmp), 50)
        t0 = time.perf_counter()
        fifty.prompt()
        first = (time.perf_counter() - t0) * 1000
        assert len(fifty.last_scan.skills) == 50, fifty.last_scan.report.invalid
        per_step(none, 20, store)  # warm both the same way
        per_step(fifty, 20, store)
        base = show("prompt build, no skills, no AGENTS.md", per_step(none, n, store))
        with_skills = show("prompt build, 50 skills + AGENTS.md", per_step(fifty, n, store))
        print(f"{'added by 50 skills + AGENTS.md':<44} median {with_skills - base:7.3f} ms")
        print(f"{'first scan of 50 skills (read + parse)':<44} {first:7.3f} ms")
        print(f"catalog + instructions: {len(fifty.prompt()):,} characters")
        asyncio.run(store.close())


if __name__ == "__main__":
    main()
