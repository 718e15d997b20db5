"""Attack class: a review-mode proposal that tries to reach outside the workspace when a
person accepts it, and malformed decisions. A real server with the rooms and the Think
extension (no model needed): the proposal's rows are put in the store directly, as a hostile
run or a bug in a tool might leave them: a file under a folder that is a link to outside, a
path that climbs out, an absolute path, and a path that is a folder in the workspace. Accepting
all of them changes nothing outside the workspace and never answers 500; bodies of every wrong
shape answer 4xx."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403  (the jp_* fixtures)

from tests.checkpoints.conftest import api, jp_server_config  # noqa: F401  (fixtures)
from tests.collab.conftest import jp_asyncio_loop, model_env, peers  # noqa: F401  (fixtures)
from tests.waiting import until
from think_kernel.proposals import Proposal

# pytest-jupyter runs coroutine tests on a loop of its own, pytest-asyncio on another; keep
# pytest-asyncio's and make the server fixtures use that same loop.
for _hook in ("pytest_pycollect_makeitem", "pytest_pyfunc_call"):
    globals().pop(_hook, None)

# Starts a real server: the slow layer.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture
def outside() -> Any:
    """A folder outside the workspace, holding one file."""
    path = Path(tempfile.mkdtemp(prefix="think-attack-outside-"))
    (path / "kept.txt").write_text("outside\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def test_accepting_a_hostile_proposal_stays_in_the_workspace(
    jp_root_dir: Path,
    jp_serverapp: Any,
    jp_fetch: Any,
    api: Any,  # noqa: F811
    outside: Path,
) -> None:
    (jp_root_dir / "linked").symlink_to(outside)
    (jp_root_dir / "folder").mkdir()
    (jp_root_dir / "folder" / "inner.txt").write_text("inner\n")
    _, session = await api("POST", "sessions", {"title": "hostile proposal"})
    sid = session["id"]
    code, _ = await api("PATCH", f"sessions/{sid}", {"review": True})
    assert code == 200
    store = jp_serverapp.extension_manager.extension_points["jupyter_ext"].app.services.store
    proposal = Proposal(store, sid)
    escape = jp_root_dir.parent / f"escape-{sid}.txt"
    hostile = {
        "linked/evil.txt": (None, b"evil\n"),
        "linked/kept.txt": (b"outside\n", b"overwritten\n"),
        f"../{escape.name}": (None, b"escape\n"),
        f"{outside}/abs.txt": (None, b"absolute\n"),
        "folder": (None, b"a file over a folder\n"),
        "fine.txt": (None, b"fine\n"),
    }
    for path, (base, data) in hostile.items():
        await proposal.set(path, base, data)

    code, listed = await api("GET", f"sessions/{sid}/proposal")
    assert code == 200, listed
    for path in hostile:
        code, out = await api("POST", f"sessions/{sid}/proposal", {"accept": [path]})
        assert code in (200, 400, 409), (path, code, out)
        if path != "fine.txt":  # told as a conflict, never applied
            assert out["accepted"] == [] and out["conflicts"][0]["id"] == path, out
    assert sorted(os.listdir(outside)) == ["kept.txt"]
    assert (outside / "kept.txt").read_text() == "outside\n"
    assert not escape.exists()
    assert (jp_root_dir / "folder" / "inner.txt").read_text() == "inner\n"
    # the legitimate one went in (the room saves it)
    await until(lambda: (jp_root_dir / "fine.txt").read_text() == "fine\n", 10, "fine.txt")

    # Bodies of every wrong shape: 4xx, never 500.
    bad: list[Any] = [[], "all", 5, None, {"accept": {"a": 1}}, {"accept": [1, 2]},
                      {"accept": "everything"}, {"reject": [None]}, {"accept": ["x"] * 5000},
                      {"accept": "all", "reason": 5}, {"accept": [["nested"]]},
                      {"accept": ["fine.txt::cell:"]}, {"accept": ["::hunk:-1"]},
                      {"accept": ["\ud800"]}]  # fmt: skip
    for body in bad:
        code, out = await api("POST", f"sessions/{sid}/proposal", body)
        assert 400 <= code < 500, (body if len(json.dumps(body)) < 200 else "big", code, out)
    for raw in (b"{", b"[" * 100_000, b"\xff\xfe", b"x" * (4 << 20)):
        resp = await jp_fetch("api", "think", "sessions", sid, "proposal", method="POST",
                              body=raw, raise_error=False)  # fmt: skip
        assert 400 <= resp.code < 500, (raw[:20], resp.code)
    code, _ = await api("GET", "sessions/s_nosuchsession/proposal")
    assert code == 404
