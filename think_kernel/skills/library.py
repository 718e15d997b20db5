"""Finding skills: the workspace's ``.think/skills``, the user-level Think folder and
packages' ``think_kernel.skills`` entry points, re-read at each request when changed.

    library = SkillLibrary("/home/me/project", SkillsConfig())
    found = library.scan()          # at each request: a stat per skill, a read if changed
    found.skills["csv-tips"].skill.instructions
    found.report.invalid            # [Problem(name, source, path, reason), ...]

A workspace skill folder is read through :class:`~think_kernel.safefs.SafeReader` rooted at
that folder, so nothing in it (SKILL.md, a reference, a script) can lead a read elsewhere,
and a skill folder that is itself a link is refused: sandboxed code can write the workspace.
For the same reason a workspace skill is offered only once a person approved its SKILL.md's
exact content (:mod:`.trust`); until then it is listed in ``found.report.review``. The hash is
taken when the file is read, so a scan that reads nothing hashes nothing.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..safefs import SafeReader, UnsafePathError
from .config import SkillsConfig
from .places import WORKSPACE_DIR, package_dirs, user_think_dir
from .report import Found, Problem, Report, Review
from .skill import InvalidSkill, Skill, parse_skill
from .trust import SkillTrust, content_hash, review_reason

#: The entry point group through which installed packages publish folders of skills.
ENTRY_POINT_GROUP = "think_kernel.skills"
#: The workspace's skills, relative to its root.
WORKSPACE_SKILLS = f"{WORKSPACE_DIR}/skills"


@dataclass(frozen=True)
class LoadedSkill:
    """A valid skill and the reader confined to its folder (``read_skill_file``)."""

    skill: Skill
    files: SafeReader
    #: The sha256 of its SKILL.md's bytes, and their text (what a person reviews).
    sha256: str = ""
    text: str = ""


@dataclass
class Scan:
    """The skills one request can use, by name, and the report of what was read."""

    skills: dict[str, LoadedSkill] = field(default_factory=dict)
    report: Report = field(default_factory=Report)
    #: Workspace skills waiting for a person's approval of their content, by name.
    waiting: dict[str, LoadedSkill] = field(default_factory=dict)


@dataclass
class _Entry:
    key: tuple[int, int, int]
    result: LoadedSkill | Problem


class SkillLibrary:
    """The skills of a workspace, its user and its packages. Cheap to scan again: a SKILL.md
    is read only when its ``(mtime, size, inode)`` changed since the last scan."""

    def __init__(
        self,
        workspace_root: str | os.PathLike[str],
        config: SkillsConfig | None = None,
        *,
        user_dir: Path | None = None,
        packages: Callable[[], list[tuple[str, Path]]] | None = None,
        trust: SkillTrust | None = None,
    ) -> None:
        self.config = config or SkillsConfig()
        #: Which workspace skill contents a person approved (none, unless told).
        self.trust = trust if trust is not None else SkillTrust()
        self.workspace = SafeReader(workspace_root)
        self.user_dir = user_dir if user_dir is not None else user_think_dir() / "skills"
        self._packages = packages or (lambda: package_dirs(ENTRY_POINT_GROUP))
        self._package_list: list[tuple[str, Path]] | None = None
        self._cache: dict[str, _Entry] = {}
        # Each skill folder's reader, and whether it is inside the workspace (checked once:
        # the reader keeps the real path it was made with).
        self._readers: dict[str, tuple[SafeReader, bool]] = {}

    def folders(self) -> list[tuple[str, Path, str]]:
        """The places searched, in precedence order, as (source, folder, shown prefix)."""
        if self._package_list is None:
            # Entry points change only when packages are installed: read them once.
            self._package_list = self._packages()
        out = [("workspace", self.workspace.root / WORKSPACE_SKILLS, WORKSPACE_SKILLS)]
        out.append(("user", self.user_dir, str(self.user_dir)))
        out += [(source, path, str(path)) for source, path in self._package_list]
        return out

    def scan(self) -> Scan:
        """Every skill of every place; the first place that has a name wins."""
        scan = Scan()
        seen: set[str] = set()
        for source, folder, shown in self.folders():
            for name, result in self._scan_folder(source, folder, shown):
                if isinstance(result, Problem):
                    scan.report.invalid.append(result)
                    continue
                if name in seen:
                    continue  # a workspace skill overrides a user or package one
                if source == "workspace" and not self._trusted(result):
                    self._wait(scan, name, result)
                    continue  # a user or package skill of that name is offered instead
                seen.add(name)
                scan.skills[name] = result
                scan.report.loaded.append(
                    Found(name, source, f"{result.skill.where}/SKILL.md", result.skill.description)
                )
        return scan

    def _trusted(self, loaded: LoadedSkill) -> bool:
        verdict = self.trust.verdict(f"{loaded.skill.where}/SKILL.md", loaded.sha256)
        return verdict is not None and verdict.approved

    def _wait(self, scan: Scan, name: str, loaded: LoadedSkill) -> None:
        path = f"{loaded.skill.where}/SKILL.md"
        reason = review_reason(self.trust.verdict(path, loaded.sha256))
        scan.waiting[name] = loaded
        scan.report.review.append(Review(name, "workspace", path, reason, loaded.sha256))

    def _list(self, source: str, folder: Path) -> list[tuple[str, bool]]:
        """(name, is a link) of the entries of a skills folder; [] if there is none."""
        try:
            if source == "workspace":
                with self.workspace.scandir(WORKSPACE_SKILLS) as entries:
                    return [(e.name, e.is_symlink()) for e in entries if _is_dir(e)]
            with os.scandir(folder) as it:
                return [(e.name, False) for e in it if e.is_dir()]
        except (FileNotFoundError, NotADirectoryError):
            return []

    def _scan_folder(
        self, source: str, folder: Path, shown: str
    ) -> list[tuple[str, LoadedSkill | Problem]]:
        try:
            names = self._list(source, folder)
        except OSError as e:
            return [(shown, Problem(shown, source, shown, f"cannot be listed: {e}"))]
        out: list[tuple[str, LoadedSkill | Problem]] = []
        for name, is_link in sorted(names):
            if name.startswith("."):
                continue
            where = f"{shown}/{name}"
            if is_link:
                reason = "the skill folder is a link; skills are read where they are"
                out.append((name, Problem(name, source, where, reason)))
                continue
            out.append((name, self._load(name, source, folder / name, where)))
        return out

    def _reader(self, path: Path) -> tuple[SafeReader, bool]:
        key = str(path)
        found = self._readers.get(key)
        if found is None:
            reader = SafeReader(path)
            found = self._readers[key] = (reader, self.workspace.root in reader.root.parents)
        return found

    def _load(self, name: str, source: str, path: Path, where: str) -> LoadedSkill | Problem:
        """The skill of one folder, from the cache when its SKILL.md did not change."""

        def problem(reason: str) -> Problem:
            return Problem(name, source, f"{where}/SKILL.md", reason)

        reader, inside = self._reader(path)
        if source == "workspace" and not inside:
            return problem("the skill folder leads out of the workspace")
        try:
            st = reader.stat("SKILL.md")
        except OSError as e:
            return problem(str(e))
        if st is None:
            return problem("the folder has no SKILL.md")
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        entry = self._cache.get(str(path))
        if entry is not None and entry.key == key:
            return entry.result
        result: LoadedSkill | Problem
        try:
            data = reader.read_bytes("SKILL.md", limit=self.config.skill_max_bytes)
            text = data.decode("utf-8")
            skill = parse_skill(name, text, source=source, where=where)
            result = LoadedSkill(skill, reader, content_hash(data), text)
        except UnsafePathError as e:
            result = problem("SKILL.md is too long" if e.errno == errno.EFBIG else str(e))
        except UnicodeDecodeError:
            result = problem("SKILL.md is not UTF-8 text")
        except InvalidSkill as e:
            result = problem(str(e))
        except OSError as e:
            result = problem(str(e))
        self._cache[str(path)] = _Entry(key, result)
        return result


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """A folder, or a link (reported as refused) to one: a stray file is not a skill."""
    try:
        return entry.is_symlink() or entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
