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
NAMED = "- (no room for their descriptions) "
COUNTED = "- and {} more skills, left out for space\n"


def catalog_text(skills: Iterable[LoadedSkill], budget: int) -> str:
    """The catalog section, at most about ``budget`` characters ("" when there are no skills).

    Skills that do not fit are named without their description, then only counted, so the
    model knows they exist and can still load them by name.
    """
    items = sorted(skills, key=lambda s: s.skill.name)
    if not items:
        return ""
    full = [f"- {s.skill.name}: {s.skill.description}\n" for s in items]
    if len(HEADER) + sum(map(len, full)) <= budget:
        return HEADER + "".join(full)
    # Keep room to name the rest: a description is dropped before a name is.
    names = [len(s.skill.name) + 2 for s in items]
    tail = [0] * (len(items) + 1)
    for i in range(len(items) - 1, -1, -1):
        tail[i] = tail[i + 1] + names[i]
    used, shown = len(HEADER) + len(NAMED), 0
    while shown < len(items) and used + len(full[shown]) + tail[shown + 1] <= budget:
        used += len(full[shown])
        shown += 1
    if used + tail[shown] <= budget:
        rest = ", ".join(s.skill.name for s in items[shown:])
        return HEADER + "".join(full[:shown]) + f"{NAMED}{rest}\n"
    used, fitting = len(HEADER) + len(COUNTED) + 4, []
    for line in full:
        if used + len(line) > budget:
            break
        fitting.append(line)
        used += len(line)
    return HEADER + "".join(fitting) + COUNTED.format(len(items) - len(fitting))
