"""The tool files of a workspace, checked before each model step and kept in the registry.

    tools = SelfTools(root, SelfToolsConfig(), registry, trusted=lambda: False)
    events = await tools.refresh(store, session_id, message_id)   # before each step
    tools.status_lines()        # for %think_status and the system prompt

A step costs one directory listing when nothing changed. A new or changed file is read
(through :class:`~think_kernel.safefs.SafeReader`: a link never leads out of the workspace),
hashed and parsed (:mod:`.schema`); unless its content is approved (:mod:`.approval`) its tools
are not offered, and the first session that sees it asks a person. Approved tools join the
registry as :class:`~think_kernel.tools.base.SchemaTool` s that run in the sandbox
(:mod:`.runner`); a file that changes, breaks or goes away takes its tools with it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..safefs import SafeReader, UnsafePathError
from ..tools.base import SchemaTool, ToolRegistry
from . import approval
from .config import SelfToolsConfig
from .runner import ApprovedSource, sandboxed_call
from .schema import FileSpec, Problem, parse_tool_file

if TYPE_CHECKING:
    from ..agent.events import Event
    from ..store import Store

log = logging.getLogger(__name__)

#: Where a workspace keeps the agent's tools.
TOOLS_DIR = ".think/tools"


@dataclass
class ToolFile:
    """One file as last seen: its stat, content, parse and approval state."""

    path: str
    stamp: tuple[int, int]
    sha256: str = ""
    source: str = ""
    spec: FileSpec | None = None
    #: "loaded", "pending" (a person decides), "rejected" or "invalid".
    state: str = "invalid"
    problems: list[Problem] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)


class SelfTools:
    """Keeps a registry's self-written tools in step with ``.think/tools``."""

    def __init__(
        self,
        root: Path,
        config: SelfToolsConfig,
        registry: ToolRegistry,
        *,
        trusted: Callable[[], bool],
        timeout: Callable[[], float] | None = None,
    ) -> None:
        self.root = Path(root)
        self.config = config
        self.registry = registry
        self.trusted = trusted
        self.timeout = timeout or (lambda: float(config.call_timeout))
        self.reader = SafeReader(self.root)
        self.files: dict[str, ToolFile] = {}
        self._listing: dict[str, tuple[int, int]] | None = None
        self._approved: dict[str, str] = {}  # path -> the content last approved (for diffs)
        self._asked: set[tuple[str, str]] = set()  # (session, key): asked once per session

    # -- each step ---------------------------------------------------------------------------

    def _list(self) -> dict[str, tuple[int, int]]:
        """``{path: (mtime_ns, size)}`` of the ``.py`` files of the tools folder."""
        out: dict[str, tuple[int, int]] = {}
        try:
            with self.reader.scandir(TOOLS_DIR) as entries:
                for e in sorted(entries, key=lambda e: e.name):
                    if not e.name.endswith(".py") or e.name.startswith("."):
                        continue
                    st = e.stat(follow_symlinks=False)
                    out[f"{TOOLS_DIR}/{e.name}"] = (st.st_mtime_ns, st.st_size)
        except (FileNotFoundError, NotADirectoryError):
            return {}
        except OSError as e:  # an unsafe folder (a link out): nothing loads, and why is logged
            log.warning("tool folder %s not read: %s", TOOLS_DIR, e)
            return {}
        return out

    async def refresh(self, store: Store, session_id: str, message_id: str = "") -> list[Event]:
        """Bring the registry up to date with the folder; the approval requests to show."""
        if not self.config.enabled:
            return []
        listing = self._list()
        pending = any(f.state == "pending" for f in self.files.values())
        if listing == self._listing and not pending:
            return []
        self._listing = listing
        for path in set(self.files) - set(listing):
            self._unload(self.files.pop(path))
        events: list[Event] = []
        for number, (path, stamp) in enumerate(listing.items()):
            f = self.files.get(path)
            if f is None or f.stamp != stamp:
                if f is not None:
                    self._unload(f)
                f = self.files[path] = self._read(path, stamp, number)
            if f.state == "pending":
                event = await self._check(store, session_id, message_id, f)
                if event is not None:
                    events.append(event)
        return events

    def _read(self, path: str, stamp: tuple[int, int], number: int) -> ToolFile:
        f = ToolFile(path, stamp)
        if number >= self.config.max_files:
            f.problems = [Problem(path, 0, f"over {self.config.max_files} tool files")]
            return f
        try:
            data = self.reader.read_bytes(path, limit=self.config.max_file_bytes)
        except UnsafePathError as e:
            f.problems = [Problem(path, 0, f"not read: {e}")]
            return f
        except OSError as e:
            f.problems = [Problem(path, 0, f"not read: {e.strerror or e}")]
            return f
        f.sha256 = approval.content_hash(data)
        try:
            f.source = data.decode("utf-8")
        except UnicodeDecodeError:
            f.problems = [Problem(path, 0, "not UTF-8 text")]
            return f
        f.spec = parse_tool_file(path, f.source)
        f.problems = list(f.spec.problems)
        if f.spec.tools:
            f.state = "pending"
        return f

    async def _check(
        self, store: Store, session_id: str, message_id: str, f: ToolFile
    ) -> Event | None:
        """Load the file if its content is approved (or trusted); else ask, once."""
        assert f.spec is not None
        if self.trusted():
            self._load(f)
            return None
        verdict = await approval.decided(store, f.path, f.sha256)
        if verdict is not None:
            ok, why = verdict
            if ok:
                self._load(f)
            else:
                f.state = "rejected"
                note = f"a person rejected this content of the file ({why or 'no reason'})"
                f.problems.append(Problem(f.path, 0, note))
            return None
        key = (session_id, approval.approval_key(f.path, f.sha256))
        if key in self._asked:
            return None
        self._asked.add(key)
        names = [t.name for t in f.spec.tools]
        diff = approval.file_diff(f.path, f.source, self._approved.get(f.path))
        return await approval.ask(store, session_id, message_id, f.path, f.sha256, diff, names)

    def _load(self, f: ToolFile) -> None:
        assert f.spec is not None
        src = ApprovedSource(f.path, f.sha256, f.source)
        owners = {t for other in self.files.values() if other is not f for t in other.tools}
        for t in f.spec.tools:
            if t.name in self.registry and t.name not in owners | set(f.tools):
                why = f"{t.name}: a tool of that name exists already (rename the function)"
                f.problems.append(Problem(f.path, t.line, why))
                continue
            if t.name in owners:
                f.problems.append(Problem(f.path, t.line, f"{t.name}: defined in another file"))
                continue
            tool = SchemaTool(
                t.name,
                f"{t.description} (self-written tool, {f.path})",
                t.parameters,
                sandboxed_call(src, t.name, self.timeout()),
                read_only=t.read_only,
            )
            self.registry.add(tool)
            f.tools.append(t.name)
        f.state = "loaded"
        self._approved[f.path] = f.source

    def _unload(self, f: ToolFile) -> None:
        for name in f.tools:
            self.registry.remove(name)
        f.tools = []

    # -- reporting ---------------------------------------------------------------------------

    def status_lines(self) -> list[str]:
        """One line per file (its state and tools), then its problems, indented."""
        out: list[str] = []
        for f in self.files.values():
            what = ", ".join(f.tools) if f.tools else "no tools"
            state = {"pending": "waits for a person's approval"}.get(f.state, f.state)
            out.append(f"{f.path}: {state} ({what})")
            out += [f"  {p}" for p in f.problems]
        return out

    def prompt(self) -> str:
        """The system prompt's section on self-written tools ("" when there are none)."""
        lines = self.status_lines()
        if not lines:
            return ""
        return (
            "## Your own tools (.think/tools)\n"
            "Python files there become tools once a person approves each new or changed "
            "file; they run in the sandbox. Current state:\n" + "\n".join(lines)
        )


def tools_dir(root: str | os.PathLike[str]) -> Path:
    """The folder of a workspace's self-written tools."""
    return Path(root) / TOOLS_DIR
