"""The session's services a tool may use, typed: ``ctx.services.web``, ``.sandbox``, ...

The runtime builds one :class:`ToolServices` per session and every :class:`ToolContext` of
the session carries it; a field left None is a service this session has not got (the tool
then says so). A test gives a tool only what it uses:

    ctx = ToolContext("s1", workspace, services=ToolServices(web=web))
    await registry.call("web_search", '{"query": "pycrdt"}', ctx)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from traitlets.config import Config

    from ..apps.registry import Apps
    from ..checkpoints import Checkpoints
    from ..collab.access import NotebookAccess
    from ..collab.filesync import FileSync
    from ..jobs.registry import Jobs
    from ..memory.notes import MemoryFile
    from ..sandbox.asuser import ActingAs
    from ..sandbox.collect import OutputCallback
    from ..sandbox.config import SandboxConfig
    from ..sandbox.result import ExecResult
    from ..schedules.config import ScheduleConfig
    from ..skills.session import SessionSkills
    from ..subagents.manager import Subagents
    from ..web.fetch import FetchConfig, FetchLog
    from ..web.services import WebServices


class CodeSandbox(Protocol):
    """Where the code tools run code: the session's sandbox, or a subagent's worker in it.

    ``res = await sandbox.run_python("print(1)", timeout=30, on_output=show)``
    """

    @property
    def config(self) -> SandboxConfig:
        """Its settings (timeouts, limits)."""
        ...

    async def run_python(
        self,
        code: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (the sandboxed process's limit)
        fresh: bool = False,
        on_output: OutputCallback | None = None,
    ) -> ExecResult:
        """Run Python (in the warm worker, or a new process with ``fresh``)."""
        ...

    async def run_bash(
        self,
        command: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (the sandboxed process's limit)
        on_output: OutputCallback | None = None,
    ) -> ExecResult:
        """Run a bash command line in a new sandboxed process."""
        ...


#: Starts the sandbox on first use (ToolError says why it cannot run) and returns it.
SandboxStarter = Callable[[], Awaitable[CodeSandbox]]


@dataclass
class FetchServices:
    """The ``fetch`` tool's settings and the log of its requests (one per session)."""

    config: FetchConfig
    log: FetchLog


@dataclass
class ReminderServices:
    """The reminder tools' limits, and how to tell the scheduler a reminder was stored."""

    config: ScheduleConfig
    # The kernel points this at the server's scheduler (over the link), or at its own.
    wake: Callable[[], Any] | None = None


@dataclass
class ToolServices:
    """What the tools of one session may use besides the workspace and the store."""

    #: Disk and rooms agree around every sandboxed run (flush before, merge after).
    files: FileSync | None = None
    #: The session sandbox, started on first use (the code tools).
    sandbox: SandboxStarter | None = None
    #: Notebooks through their documents (the notebook tools).
    notebooks: NotebookAccess | None = None
    web: WebServices | None = None
    fetch: FetchServices | None = None
    reminders: ReminderServices | None = None
    #: The kernel's background jobs (``run_job`` and the job tools).
    jobs: Jobs | None = None
    #: The kernel's live apps (``serve_app`` and the app tools).
    apps: Apps | None = None
    #: Tasks and subagents of the running request.
    subagents: Subagents | None = None
    #: Whose rights file access has (a root kernel acts as the session's sandbox uid).
    acting: ActingAs | None = None
    #: The session's AGENTS.md files and skills (the skill tools).
    skills: SessionSkills | None = None
    #: The checkpoint of the running turn: files are copied before a tool changes them.
    checkpoints: Checkpoints | None = None
    #: The person's memory file (``remember`` adds to it; every prompt carries it).
    memory: MemoryFile | None = None

    @classmethod
    def for_session(cls, config: Config | None, **services: Any) -> ToolServices:
        """A session's services: the ones given, plus ``fetch`` and ``reminders`` made from
        the configuration (the kernel later points the reminders' wake at the server's
        scheduler over the link, or at its own when it runs without a server)."""
        from ..schedules.config import ScheduleConfig
        from ..web.fetch import FetchConfig, FetchLog

        return cls(
            fetch=FetchServices(FetchConfig(config=config), FetchLog()),
            reminders=ReminderServices(ScheduleConfig(config=config)),
            **services,
        )
