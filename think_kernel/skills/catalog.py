"""The skill catalog in the system prompt: names and descriptions within a budget.

text = catalog_text(scan.skills.values(), budget=8000)
"""

from __future__ import annotations

from collections.abc import Iterable

from .library import LoadedSkill

HEADER = """\
## Skills
Skills are instructions for particular tasks, written by the people you work with. When a
request matches a skill's description, call load_skill(name) before you start and follow what
it says; read_skill_file(name, path) reads the skill's other files (references, scripts). A
skill's scripts run like any code, with bash or execute_code, at the path load_skill gives.
"""


def catalog_text(skills: Iterable[LoadedSkill], budget: int) -> str:
    """The catalog section, at most about ``budget`` characters ("" when there are no skills).

    Skills that do not fit are named without their description, then only counted, so the
    model knows they exist and can still load them by name.
    """
    items = sorted(skills, key=lambda s: s.skill.name)
    if not items:
        return ""
    lines = [HEADER]
    used = len(HEADER)
    rest: list[str] = []
    for item in items:
        line = f"- {item.skill.name}: {item.skill.description}\n"
        if rest or used + len(line) > budget:
            rest.append(item.skill.name)
            continue
        lines.append(line)
        used += len(line)
    if rest:
        names = ", ".join(rest)
        if used + len(names) + 40 <= budget:
            lines.append(f"- (descriptions left out for space) {names}\n")
        else:
            lines.append(f"- and {len(rest)} more skills, left out for space\n")
    return "".join(lines)
