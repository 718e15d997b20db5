"""Finding agent types: the workspace's ``.think/agents/*.md``, the user-level Think folder's
``agents/``, packages' ``think_kernel.agents`` entry points and the built-in ones, read again
when they change.

    library = AgentLibrary("/home/me/project")
    found = library.scan()          # a stat per file, a read if it changed
    found.types["reviewer"].kind.limits.allows("write_file")      # False
    found.report.invalid            # [Problem(name, source, path, reason), ...]

The first place that has a name wins (a workspace ``reviewer.md`` replaces the built-in one).
A workspace file is instructions from the repository: like a workspace skill, it is read
through :class:`~think_kernel.safefs.SafeReader` (no link leads the read elsewhere) and used
only once a person approved its exact content (the trust of :mod:`think_kernel.skills.trust`,
keyed by its path); until then it is listed in ``found.report.review`` and the next place's
type of that name, if any, is used.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..safefs import SafeReader, UnsafePathError
from ..skills.places import WORKSPACE_DIR, package_dirs, user_think_dir
from ..skills.report import Found, Problem, Report, Review
from ..skills.trust import SkillTrust, content_hash, review_reason
from .agenttype import AgentType, InvalidAgentType, parse_agent_type
from .builtin import BUILTIN_TYPES

#: The entry point group through which installed packages publish folders of agent types.
ENTRY_POINT_GROUP = "think_kernel.agents"
#: The workspace's agent types, relative to its root.
WORKSPACE_AGENTS = f"{WORKSPACE_DIR}/agents"
#: Bytes of one agent type file; a longer one is refused.
MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class LoadedType:
    """A valid agent type, with the sha256 and text of its file (what a person reviews)."""

    kind: AgentType
    sha256: str = ""
    text: str = ""


@dataclass
class AgentScan:
    """The agent types one request can use, by name, and the report of what was read."""

    types: dict[str, LoadedType] = field(default_factory=dict)
    report: Report = field(default_factory=Report)
    #: Workspace types waiting for a person's approval of their content, by name.
    waiting: dict[str, LoadedType] = field(default_factory=dict)


class AgentLibrary:
    """The agent types of a workspace, its user, its packages and Think itself."""

    def __init__(
        self,
        workspace_root: str | os.PathLike[str],
        *,
        user_dir: Path | None = None,
        packages: Callable[[], list[tuple[str, Path]]] | None = None,
        trust: SkillTrust | None = None,
    ) -> None:
        #: Which workspace contents a person approved (none, unless told).
        self.trust = trust if trust is not None else SkillTrust()
        self.workspace = SafeReader(workspace_root)
        self.user_dir = user_dir if user_dir is not None else user_think_dir() / "agents"
        self._packages = packages or (lambda: package_dirs(ENTRY_POINT_GROUP))
        self._package_list: list[tuple[str, Path]] | None = None
        self._cache: dict[str, tuple[tuple[int, int, int], LoadedType | Problem]] = {}

    def folders(self) -> list[tuple[str, Path, str]]:
        """The folders searched, in precedence order, as (source, folder, shown prefix); the
        built-in types (:mod:`.builtin`) come after them all."""
        if self._package_list is None:
            # Entry points change only when packages are installed: read them once.
            self._package_list = self._packages()
        out = [("workspace", self.workspace.root / WORKSPACE_AGENTS, WORKSPACE_AGENTS)]
        out.append(("user", self.user_dir, str(self.user_dir)))
        out += [(source, path, str(path)) for source, path in self._package_list]
        return out

    def scan(self) -> AgentScan:
        """Every agent type of every place; the first place that has a name wins."""
        scan = AgentScan()
        for source, folder, shown in self.folders():
            for name, result in self._scan_folder(source, folder, shown):
                if isinstance(result, Problem):
                    scan.report.invalid.append(result)
                    continue
                if name in scan.types:
                    continue
                if source == "workspace" and not self._trusted(result):
                    path = result.kind.where
                    reason = review_reason(self.trust.verdict(path, result.sha256))
                    scan.waiting[name] = result
                    scan.report.review.append(Review(name, source, path, reason, result.sha256))
                    continue  # a user, package or built-in type of that name is used instead
                scan.types[name] = result
                scan.report.loaded.append(
                    Found(name, source, result.kind.where, result.kind.description)
                )
        for kind in BUILTIN_TYPES:  # last: any file of the same name replaces it
            if kind.name not in scan.types:
                scan.types[kind.name] = LoadedType(kind)
                scan.report.loaded.append(Found(kind.name, "builtin", kind.where, kind.description))
        return scan

    def _trusted(self, loaded: LoadedType) -> bool:
        verdict = self.trust.verdict(loaded.kind.where, loaded.sha256)
        return verdict is not None and verdict.approved

    def _list(self, source: str, folder: Path) -> list[tuple[str, bool]]:
        """(file name, is a link) of the ``*.md`` files of a folder; [] if there is none."""
        try:
            if source == "workspace":
                with self.workspace.scandir(WORKSPACE_AGENTS) as entries:
                    return [(e.name, e.is_symlink()) for e in entries if e.name.endswith(".md")]
            with os.scandir(folder) as it:
                return [(e.name, False) for e in it if e.name.endswith(".md") and e.is_file()]
        except (FileNotFoundError, NotADirectoryError):
            return []

    def _scan_folder(
        self, source: str, folder: Path, shown: str
    ) -> list[tuple[str, LoadedType | Problem]]:
        try:
            names = self._list(source, folder)
        except OSError as e:
            return [(shown, Problem(shown, source, shown, f"cannot be listed: {e}"))]
        out: list[tuple[str, LoadedType | Problem]] = []
        for filename, is_link in sorted(names):
            if filename.startswith("."):
                continue
            name = filename.removesuffix(".md")
            where = f"{shown}/{filename}"
            if is_link:
                reason = "the file is a link; agent types are read where they are"
                out.append((name, Problem(name, source, where, reason)))
                continue
            out.append((name, self._load(name, source, folder / filename, where)))
        return out

    def _load(self, name: str, source: str, path: Path, where: str) -> LoadedType | Problem:
        """The agent type of one file, from the cache when the file did not change."""

        def problem(reason: str) -> Problem:
            return Problem(name, source, where, reason)

        try:
            if source == "workspace":
                st = self.workspace.stat(where)
            else:
                st = path.stat()
        except OSError as e:
            return problem(str(e))
        if st is None:
            return problem("the file is gone")
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        cached = self._cache.get(str(path))
        if cached is not None and cached[0] == key:
            return cached[1]
        result: LoadedType | Problem
        try:
            if source == "workspace":
                data = self.workspace.read_bytes(where, limit=MAX_BYTES)
            else:
                data = _read_limited(path)
            text = data.decode("utf-8")
            kind = parse_agent_type(name, text, source=source, where=where)
            result = LoadedType(kind, content_hash(data), text)
        except UnsafePathError as e:
            result = problem("the file is too long" if e.errno == errno.EFBIG else str(e))
        except UnicodeDecodeError:
            result = problem("the file is not UTF-8 text")
        except InvalidAgentType as e:
            result = problem(str(e))
        except OSError as e:
            result = problem(str(e))
        self._cache[str(path)] = (key, result)
        return result


def _read_limited(path: Path) -> bytes:
    with open(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise UnsafePathError(f"{path} is over {MAX_BYTES} bytes", errno.EFBIG)
    return data
