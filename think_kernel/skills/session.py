"""The instructions and skills of one session, read again at each request.

skills = SessionSkills(SkillLibrary(root), ProjectInstructions(root), "nb/a.ipynb")
await skills.check_trust(store)        # each request: verdicts on new skill contents
system = build_system_prompt(..., skills.prompt())   # AGENTS.md + the skill catalog
request, attached = skills.expand("/csv-tips read data.csv")
skills.status()   # {"instructions": {...}, "skills": {...}} for %think_status
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .catalog import catalog_text
from .instructions import ProjectInstructions
from .library import LoadedSkill, Scan, SkillLibrary
from .report import Report

if TYPE_CHECKING:
    from ..store import Store

#: The catalog's line on workspace skills no person approved yet.
WAITING = (
    "\n{} new or changed workspace skills wait for a person's review (the Skills area of the "
    "sidebar); they cannot be loaded until then.\n"
)
#: ``/name`` at the very start of a message names a skill to load with it.
_SLASH = re.compile(r"^/([a-z0-9]+(?:-[a-z0-9]+)*)(?=\s|$)")


def skill_block(loaded: LoadedSkill) -> str:
    """A skill's instructions as the model gets them (``load_skill`` and ``/name``)."""
    skill = loaded.skill
    return (
        f'<skill name="{skill.name}" source="{skill.source}" folder="{skill.where}">\n'
        f"{skill.instructions}\n</skill>\n"
        f"The skill's files are in {skill.where}/ (read them with read_skill_file; run its "
        "scripts from there like any code)."
    )


class SessionSkills:
    """What one session's requests see of AGENTS.md files and skills."""

    def __init__(
        self, library: SkillLibrary, instructions: ProjectInstructions, session_path: str = ""
    ) -> None:
        self.library = library
        self.instructions = instructions
        self.session_path = session_path
        self.last_scan = Scan()
        self.last_instructions = Report()
        #: The scan :meth:`check_trust` just made, when no verdict could change it.
        self._checked: Scan | None = None

    async def check_trust(self, store: Store) -> None:
        """Learn from the store whether a person decided on the workspace skills waiting for
        review (before a request: the catalog then offers the approved ones)."""
        scan = self.library.scan()
        contents = [(f"{w.skill.where}/SKILL.md", w.sha256) for w in scan.waiting.values()]
        if not contents:
            self._checked = scan  # the prompt that follows uses it: one scan a request
            return
        await self.library.trust.refresh(store, contents)

    def scan(self) -> Scan:
        """The skills now (a stat per skill; a SKILL.md is re-read only when it changed)."""
        checked, self._checked = self._checked, None
        self.last_scan = checked or self.library.scan()
        return self.last_scan

    def prompt(self) -> str:
        """The system prompt's sections: project instructions, then the skill catalog."""
        text, self.last_instructions = self.instructions.read(self.session_path)
        scan = self.scan()
        catalog = catalog_text(scan.skills.values(), self.library.config.catalog_max_chars)
        if scan.waiting:
            # A count only: nothing of an unreviewed file, not even its name, reaches the model.
            catalog += WAITING.format(len(scan.waiting))
        return "\n".join(p for p in (text, catalog) if p)

    def find(self, name: str) -> LoadedSkill | None:
        """The skill of that name as it is now, or None."""
        return self.scan().skills.get(name)

    def expand(self, request: str) -> tuple[str, str | None]:
        """A request starting with ``/name`` of a known skill, with that skill's instructions
        attached, and the name; any other request unchanged (and None)."""
        m = _SLASH.match(request)
        if m is None:
            return request, None
        loaded = self.find(m.group(1))
        if loaded is None:
            return request, None
        rest = request[m.end() :].strip() or f"Use the {loaded.skill.name} skill."
        return f"{rest}\n\n(The person asked for this skill.)\n{skill_block(loaded)}", m.group(1)

    def status(self) -> dict[str, Any]:
        """What the last request loaded: ``{"instructions": ..., "skills": ...}``."""
        report = self.last_scan.report
        if not report.loaded and not report.invalid and not report.review:
            self.prompt()
        return {
            "instructions": self.last_instructions.as_json(),
            "skills": self.last_scan.report.as_json(),
        }

    def status_rows(self) -> list[tuple[str, str]]:
        """``%think_status`` rows (Markdown), read now: what the next request loads."""
        self.prompt()

        def code(text: str) -> str:
            return "`" + text.replace("`", "'") + "`"

        files = [
            code(f.path) + (f" ({f.note})" if f.note else "") for f in self.last_instructions.loaded
        ]
        files += [f"{code(p.path)}: {p.reason}" for p in self.last_instructions.invalid]
        skills = [f"{code(f.name)} ({f.source})" for f in self.last_scan.report.loaded]
        skills += [
            f"{code(p.name)} **invalid** ({p.source}: {p.reason})"
            for p in self.last_scan.report.invalid
        ]
        skills += [
            f"{code(r.name)} **{r.reason.split(':')[0].split(';')[0]}** ({r.path})"
            for r in self.last_scan.report.review
        ]
        return [
            ("instructions", ", ".join(files) or "no AGENTS.md"),
            ("skills", ", ".join(skills) or "none (add them in `.think/skills/<name>/SKILL.md`)"),
        ]
