"""Which folders count as the kernel's Python environment: .pth lines and editable installs."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from think_kernel.sandbox import envpaths


def test_pth_lines_and_editable_finders_name_their_source_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site-packages"
    src, pkg, gone = tmp_path / "src", tmp_path / "proj" / "mypkg", tmp_path / "gone"
    for d in (site, src, pkg):
        d.mkdir(parents=True)
    (site / "a.pth").write_text(f"# a comment\nimport os; os.getcwd()\n{src}\n{gone}\n\n")
    (site / "__editable___mypkg_1_0_finder.py").write_text(
        f"import sys\nMAPPING: dict[str, str] = {{'mypkg': {str(pkg)!r}}}\nNAMESPACES = {{}}\n"
    )
    (site / "__editable___broken_finder.py").write_text("MAPPING = {")  # not Python: ignored
    monkeypatch.setattr(envpaths, "_site_dirs", lambda: [str(site)])
    assert envpaths.added_paths() == [str(src), str(pkg)]
    # An editable install made while the kernel runs is seen by the next sandbox.
    later = tmp_path / "later"
    later.mkdir()
    (site / "b.pth").write_text(f"{later}\n")
    assert envpaths.added_paths() == [str(src), str(later), str(pkg)]
    assert envpaths.outermost([str(tmp_path), str(src), "/a/b", "/a"]) == ["/a", str(tmp_path)]


def test_env_paths_hold_the_interpreter_and_its_standard_library() -> None:
    paths = envpaths.env_paths()

    def inside(p: str) -> bool:
        return any(p == q or p.startswith(q + "/") for q in paths)

    assert inside(os.path.realpath(sys.executable)) and inside(sys.prefix)
    assert inside(os.path.dirname(os.__file__)) and inside(os.path.realpath(threading.__file__))
