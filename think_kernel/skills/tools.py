"""The skill tools: ``load_skill`` (a skill's instructions) and ``read_skill_file`` (one of
its other files). Both read through the skill folder's own
:class:`~think_kernel.safefs.SafeReader`: a path or a link never leads out of the folder.
"""

from __future__ import annotations

import errno

from ..safefs import UnsafePathError
from ..tools.base import ToolContext, ToolError, ToolFunc, ToolOutput, ToolRegistry, read_only
from .library import LoadedSkill
from .session import skill_block

#: Files listed after a skill's instructions (the rest are still readable by name).
MAX_LISTED = 100


def _skill(ctx: ToolContext, name: str) -> LoadedSkill:
    skills = ctx.services.skills
    loaded = skills.find(name) if skills is not None else None
    if loaded is None and skills is not None and name in skills.last_scan.waiting:
        raise ToolError(
            f"skill {name!r} is new or changed and waits for a person's review (the Skills "
            "area of the sidebar); it cannot be loaded until they approve it",
            "NOT_REVIEWED",
        )
    if loaded is None:
        known = sorted(skills.last_scan.skills) if skills is not None else []
        raise ToolError(
            f"no skill named {name!r}; the skills are: {', '.join(known) or 'none'}",
            "NO_SUCH_SKILL",
        )
    return loaded


def _files(loaded: LoadedSkill) -> list[str]:
    """The skill's files other than SKILL.md, breadth first, up to ``MAX_LISTED``."""
    out: list[str] = []
    folders = [""]
    while folders and len(out) < MAX_LISTED:
        folder = folders.pop(0)
        try:
            with loaded.files.scandir(folder) as entries:
                for e in sorted(entries, key=lambda e: e.name):
                    rel = f"{folder}/{e.name}" if folder else e.name
                    if e.is_dir(follow_symlinks=False):
                        folders.append(rel)
                    elif rel != "SKILL.md":
                        out.append(rel)
        except OSError:
            continue
    return out[:MAX_LISTED]


@read_only
async def load_skill(ctx: ToolContext, name: str) -> ToolOutput:
    """Load a skill's instructions (see the Skills list in your instructions); follow them.

    Args:
        name: the skill's name, as in the list
    """
    loaded = _skill(ctx, name)
    files = _files(loaded)
    listing = "\nFiles: " + ", ".join(files) if files else ""
    return ToolOutput(
        skill_block(loaded) + listing,
        summary=f"loaded skill {name} ({loaded.skill.source})",
    )


@read_only
async def read_skill_file(ctx: ToolContext, name: str, path: str) -> ToolOutput:
    """Read a file of a skill (a reference, a script, an asset), as text.

    Args:
        name: the skill's name
        path: the file's path inside the skill folder, e.g. references/api.md
    """
    loaded = _skill(ctx, name)
    limit = ctx.services.skills.library.config.file_max_bytes if ctx.services.skills else 0
    try:
        data = loaded.files.read_bytes(path, limit=limit)
    except UnsafePathError as e:
        if e.errno == errno.EFBIG:
            too_big = f"{path!r} of skill {name} is over {limit} bytes"
            raise ToolError(too_big, "TOO_LARGE") from None
        raise ToolError(f"{path!r} of skill {name}: {e}", "UNSAFE_PATH") from None
    except FileNotFoundError:
        raise ToolError(f"skill {name} has no file {path!r}", "NOT_FOUND") from None
    except OSError as e:
        raise ToolError(f"{path!r} of skill {name}: {e.strerror or e}", "READ_FAILED") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{path!r} of skill {name} is not text", "BINARY") from None
    return ToolOutput(text, summary=f"read {path} of skill {name}: {len(data)} bytes")


SKILL_TOOLS: list[ToolFunc] = [load_skill, read_skill_file]


def offer_skill_tools(tools: ToolRegistry, any_skills: bool) -> None:
    """Offer the skill tools only while the workspace has a skill: without one they would
    only take room in every request, which a small context window feels."""
    for func in SKILL_TOOLS:
        tools.offer(func.__name__, any_skills)
