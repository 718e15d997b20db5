"""File tools: read, write, edit, delete and list files in the workspace.

They go through ``ctx.workspace`` (local disk today, the Yjs rooms of jupyter-collaboration
when a server is there), so the rules live here once: paths stay inside the workspace, a
file must be read before it is edited or overwritten, and the calling session must be allowed
to do it itself (checked before the workspace, which may be a room the server edits as root,
is asked: :func:`~.workspace.check_access`).
"""

from __future__ import annotations

from ..skills.trust import replaced_text, trust_written_skill
from .base import ToolContext, ToolError, ToolFunc, ToolOutput
from .textpage import MAX_LINE, TextPage
from .workspace import PathError, check_access, check_relative

DEFAULT_LIMIT = 2000


def _must_have_read(ctx: ToolContext, path: str, verb: str) -> None:
    if path not in ctx.read_paths:
        raise ToolError(
            f"read {path!r} with read_file before you {verb} it (it may have changed)",
            "NOT_READ",
        )


def _lines(n: int) -> str:
    return f"{n} line" if n == 1 else f"{n} lines"


async def read_file(
    ctx: ToolContext, path: str, offset: int = 1, limit: int = DEFAULT_LIMIT
) -> ToolOutput:
    """Read a text file; lines are numbered. Use offset/limit to page through long files.

    Args:
        path: file path relative to the workspace root
        offset: first line to return (1-based)
        limit: maximum number of lines to return
    """
    rel = check_relative(path)
    if offset < 1 or limit < 1:
        raise ToolError("offset and limit must be at least 1", "INVALID_ARGUMENTS")
    await check_access(ctx.workspace, rel, "read")
    page = await ctx.workspace.read_page(rel, offset, limit)
    if page.binary:
        raise ToolError(
            f"{rel} looks like a binary file ({page.size} bytes, it contains NUL bytes); "
            "read_file shows text. Inspect it with execute_code or bash.",
            "NOT_TEXT",
        )
    ctx.read_paths.add(rel)
    return ToolOutput(_page_text(rel, page), summary=_page_summary(rel, page))


def _page_text(rel: str, page: TextPage) -> str:
    chunk, offset = page.lines, page.offset
    if not chunk:
        if page.size == 0:
            return "(empty file)"
        total = f" (it has {_lines(page.total_lines)})" if page.total_lines is not None else ""
        return f"(no lines from line {offset}: the file ends before it{total})"
    width = len(str(offset + len(chunk)))
    body = "\n".join(f"{i:>{width}}\t{line}" for i, line in enumerate(chunk, start=offset))
    notes = []
    if page.lossy:
        notes.append(
            "[the file is not valid UTF-8: bytes that are not were shown as \ufffd; "
            "edit_file and write_file will not change it]"
        )
    if page.cut_lines:
        notes.append(f"[{_lines(page.cut_lines)} longer than {MAX_LINE} characters shown cut]")
    if page.next_offset is not None:
        if page.total_lines is not None:
            more = page.total_lines - (page.next_offset - 1)
            notes.append(f"[{more} more lines; call read_file with offset={page.next_offset}]")
        else:
            notes.append(
                f"[more lines follow (the file is {page.size} bytes); call read_file with "
                f"offset={page.next_offset}]"
            )
    return "\n".join([body, *notes])


def _page_summary(rel: str, page: TextPage) -> str:
    of = f" of {page.total_lines}" if page.total_lines is not None else f" of {page.size} bytes"
    return f"read {rel}: {_lines(len(page.lines))}{of}"


async def write_file(ctx: ToolContext, path: str, content: str) -> ToolOutput:
    """Create a file, or replace one you have read, with the given content.

    Args:
        path: file path relative to the workspace root
        content: the complete new content of the file
    """
    rel = check_relative(path)
    await check_access(ctx.workspace, rel, "write")
    existed = ctx.workspace.resolve(rel).exists()
    if existed:
        _must_have_read(ctx, rel, "overwrite")
    before = await replaced_text(ctx, rel) if existed else None  # a skill's, for its trust
    await ctx.workspace.write_text(rel, content)
    ctx.read_paths.add(rel)
    n = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    await ctx.file_changed(rel, "modified" if existed else "created")
    await trust_written_skill(ctx, rel, before, content)
    return ToolOutput(f"Wrote {rel} ({_lines(n)}).", summary=f"wrote {rel}: {_lines(n)}")


async def edit_file(
    ctx: ToolContext, path: str, old_string: str, new_string: str, replace_all: bool = False
) -> ToolOutput:
    """Replace exact text in a file you have read; it must match once unless replace_all.

    Args:
        path: file path relative to the workspace root
        old_string: the exact text to replace (include surrounding lines to make it unique)
        new_string: the replacement text
        replace_all: replace every occurrence instead of requiring exactly one
    """
    rel = check_relative(path)
    _must_have_read(ctx, rel, "edit")
    if old_string == new_string:
        raise ToolError("old_string and new_string are the same; nothing to change")
    if not old_string:
        raise ToolError("old_string is empty; use write_file to create a file")
    await check_access(ctx.workspace, rel, "read")
    await check_access(ctx.workspace, rel, "write")
    # The edit applies to the text the model read (a room-backed workspace keeps it), so the
    # write can merge what others changed since and refuse what clashes; else the current text.
    seen = getattr(ctx.workspace, "seen", None)
    text = seen(rel) if seen is not None else None
    if text is None or old_string not in text:
        text = await ctx.workspace.read_text(rel)
    count = text.count(old_string)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {rel}; read the file again and copy the exact text "
            "(whitespace and indentation included)",
            "NO_MATCH",
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string matches {count} places in {rel}; add surrounding lines to make it "
            "unique, or pass replace_all=true",
            "AMBIGUOUS_MATCH",
        )
    new_text = (
        text.replace(old_string, new_string)
        if replace_all
        else text.replace(old_string, new_string, 1)
    )
    await ctx.workspace.write_text(rel, new_text)
    await ctx.file_changed(rel, "modified")
    await trust_written_skill(ctx, rel, text, new_text)
    n = count if replace_all else 1
    return ToolOutput(
        f"Edited {rel}: replaced {n} occurrence{'s' if n > 1 else ''}.",
        summary=f"edited {rel}: {n} replacement{'s' if n > 1 else ''}",
    )


async def delete_file(ctx: ToolContext, path: str) -> ToolOutput:
    """Delete a file from the workspace.

    Args:
        path: file path relative to the workspace root
    """
    rel = check_relative(path)
    await check_access(ctx.workspace, rel, "delete")
    await ctx.workspace.delete(rel)
    ctx.read_paths.discard(rel)
    await ctx.file_changed(rel, "deleted")
    return ToolOutput(f"Deleted {rel}.", summary=f"deleted {rel}")


async def list_files(ctx: ToolContext, path: str = ".") -> ToolOutput:
    """List the files and folders in a workspace directory (not recursive).

    Args:
        path: directory relative to the workspace root; "." is the root
    """
    if path not in ("", ".", "./"):
        path = check_relative(path)
    await check_access(ctx.workspace, path, "list")
    entries = await ctx.workspace.list(path)
    if not entries:
        return ToolOutput(f"{path or '.'} is empty.", summary=f"listed {path or '.'}: 0 entries")
    lines = [f"{e.path}/" if e.is_dir else f"{e.path}\t{e.size} bytes" for e in entries]
    return ToolOutput("\n".join(lines), summary=f"listed {path or '.'}: {len(entries)} entries")


FILE_TOOLS: list[ToolFunc] = [read_file, write_file, edit_file, delete_file, list_files]

__all__ = ["FILE_TOOLS", "PathError", *[f.__name__ for f in FILE_TOOLS]]
