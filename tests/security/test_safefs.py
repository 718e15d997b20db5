"""The link-safe file layer itself (``think_kernel.safefs``), on both of its implementations:
``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` and the ``O_NOFOLLOW`` walk used where the
kernel has no openat2. Links are planted here by the test; tests/security/test_write_links.py
has sandboxed code plant them."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from think_kernel.safefs import HAVE_OPENAT2, MAX_DEPTH, SafeRoot, UnsafePathError


@pytest.fixture(params=[True, False], ids=["openat2", "walk"])
def fs(request: pytest.FixtureRequest, tmp_path: Path) -> SafeRoot:
    """A SafeRoot on ``tmp_path/root``; ``tmp_path/outside`` holds a file that must not change."""
    if request.param and not HAVE_OPENAT2:
        pytest.fail("this kernel has no openat2: the test machine is Linux 6.x (see BRIEF.md)")
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "keep").write_text("keep")
    return SafeRoot(root, use_openat2=request.param)


def outside_ok(fs: SafeRoot) -> None:
    out = fs.root.parent / "outside"
    assert sorted(p.name for p in out.iterdir()) == ["keep"]
    assert (out / "keep").read_text() == "keep"


def test_writes_refuse_links_anywhere_on_the_path(fs: SafeRoot) -> None:
    root, out = fs.root, fs.root.parent / "outside"
    os.symlink(out / "keep", root / "final")
    os.symlink(out, root / "dir")
    (root / "real").mkdir()
    os.symlink("real", root / "inside")  # even a link that stays inside
    for path in ("final", "dir/new", "dir/keep", "inside/x", "dir/a/b/c"):
        with pytest.raises(UnsafePathError) as e:
            fs.write_bytes(path, b"pwned")
        assert e.value.errno == errno.ELOOP and "symbolic link" in str(e.value)
    for op in (lambda: fs.makedirs("dir/x"), lambda: fs.mkdir("dir/x"),
               lambda: fs.append_bytes("final", b"x"), lambda: fs.unlink("dir/keep"),
               lambda: fs.rename("real", "dir/moved"), lambda: fs.rmtree("dir/x")):  # fmt: skip
        with pytest.raises(OSError):
            op()
    outside_ok(fs)
    fs.write_bytes("real/a/b/new.txt", b"fine")  # missing folders are created, link-free
    assert (root / "real/a/b/new.txt").read_bytes() == b"fine"
    fs.unlink("final")  # removing a link removes the link, not its target
    assert not (root / "final").exists()
    outside_ok(fs)


def test_atomic_replace_keeps_mode_and_leaves_no_temp(fs: SafeRoot) -> None:
    target = fs.root / "f.txt"
    target.write_text("old")
    os.chmod(target, 0o640)
    before = set(os.listdir(fs.root))
    fs.write_bytes("f.txt", b"new")
    assert target.read_bytes() == b"new" and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert set(os.listdir(fs.root)) == before
    with pytest.raises(RuntimeError), fs.open_atomic("f.txt") as f:
        f.write(b"half")
        raise RuntimeError("crash mid-write")
    assert target.read_bytes() == b"new" and set(os.listdir(fs.root)) == before


def test_reads_follow_links_only_inside(fs: SafeRoot) -> None:
    root, out = fs.root, fs.root.parent / "outside"
    (root / "a.txt").write_text("inside")
    os.symlink("a.txt", root / "rel")
    os.symlink(root / "a.txt", root / "abs")  # an absolute link back inside
    os.symlink(out / "keep", root / "leak")
    os.symlink(out, root / "leakdir")
    for path in ("rel", "abs"):
        with fs.open_read(path) as f:
            assert f.read() == b"inside"
    for path in ("leak", "leakdir/keep"):
        with pytest.raises(UnsafePathError) as e:
            fs.open_read(path)
        assert "outside" in str(e.value)
    with pytest.raises(UnsafePathError):
        fs.open_read("rel", follow=False)
    assert fs.stat("rel") is not None and fs.stat("missing") is None
    with pytest.raises(UnsafePathError):
        fs.stat("leak")
    assert stat.S_ISLNK(fs.lstat("leak").st_mode)  # type: ignore[union-attr]
    with fs.scandir("") as entries:
        assert {e.name for e in entries} >= {"a.txt", "rel", "leak"}
    with pytest.raises(UnsafePathError):
        with fs.scandir("leakdir"):
            pass


def test_special_files_are_refused_without_blocking(fs: SafeRoot) -> None:
    os.mkfifo(fs.root / "fifo")
    with pytest.raises(UnsafePathError) as e:
        fs.open_read("fifo")  # would block forever with a plain open()
    assert "FIFO" in str(e.value)
    with pytest.raises(UnsafePathError):
        fs.write_bytes("fifo", b"x")
    with pytest.raises(IsADirectoryError):
        fs.open_read("")


def test_private_folders_and_deep_paths(fs: SafeRoot, tmp_path: Path) -> None:
    (fs.root / "store").mkdir()
    (fs.root / "store" / "think.db").write_text("db")
    os.symlink("store", fs.root / "alias")
    private = SafeRoot(fs.root, private=[fs.root / "store"], use_openat2=fs.use_openat2)
    for op in (lambda: private.open_read("store/think.db"),
               lambda: private.open_read("alias/think.db"),
               lambda: private.write_bytes("store/x", b"x"),
               lambda: private.scandir("alias").__enter__()):  # fmt: skip
        with pytest.raises(UnsafePathError) as e:
            op()
        assert "private" in str(e.value)
    with pytest.raises(UnsafePathError) as e:
        fs.write_bytes("d/" * (MAX_DEPTH + 1) + "x", b"x")
    assert "too deep" in str(e.value)
    for bad in ("/etc/passwd", "../x", "a/../../x", "a\x00b"):
        with pytest.raises(UnsafePathError):
            fs.write_bytes(bad, b"x")
