"""DocumentService against a real jupyter-collaboration server and real websocket peers."""

from __future__ import annotations

import socket

import nbformat
import pytest

from tests.waiting import until
from think_kernel.collab import ydocs

from .conftest import disk_notebook, disk_text, until_live
from .peers import wait_change


async def test_agent_edit_appears_in_client_and_on_disk(service, peers, jp_root_dir):
    (jp_root_dir / "a.py").write_text("x = 1\n")
    tab = await peers("a.py")
    out = await service.write_text("a.py", "x = 1\ny = 2\n", action_id="act_1")
    assert out["ops"] == 1
    await wait_change(tab, lambda: str(tab.text()) == "x = 1\ny = 2\n")
    await until(lambda: disk_text(jp_root_dir, "a.py") == "x = 1\ny = 2\n", what="autosave")
    # the agent shows as a collaborator named Think
    await wait_change(tab, lambda: "Think" in tab.users())


async def test_new_file_through_a_room(service, jp_root_dir):
    await service.write_text("sub/new.txt", "hello\n", action_id="a")
    await until(
        lambda: (
            (jp_root_dir / "sub/new.txt").exists()
            and disk_text(jp_root_dir, "sub/new.txt") == "hello\n"
        )
    )
    assert (await service.read_text("sub/new.txt"))["content"] == "hello\n"


async def test_human_typing_in_same_file_survives(service, peers, jp_root_dir):
    (jp_root_dir / "b.py").write_text("def f():\n    return 1\n\n# end\n")
    tab = await peers("b.py")
    # the agent read the file, the human types at the end, then the agent writes its edit
    base = (await service.read_text("b.py"))["content"]
    tab.type_at(tab.text(), len(str(tab.text())), "# human was here\n")
    await until_live(service, "b.py", lambda t: "human was here" in t)
    await service.write_text("b.py", base.replace("return 1", "return 2"), base=base)
    want = "def f():\n    return 2\n\n# end\n# human was here\n"
    await wait_change(tab, lambda: str(tab.text()) == want)
    await until(lambda: disk_text(jp_root_dir, "b.py") == want, what="autosave")


async def test_edit_text_is_granular(service, peers, jp_root_dir):
    (jp_root_dir / "c.txt").write_text("alpha beta gamma\n")
    tab = await peers("c.txt")
    tab.type_at(tab.text(), 0, "HUMAN ")
    out = await service.edit_text("c.txt", "beta", "BETA", action_id="x")
    assert out["count"] == 1
    await wait_change(tab, lambda: str(tab.text()) == "HUMAN alpha BETA gamma\n")


async def test_notebook_cells_and_validity(service, peers, jp_root_dir):
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("a = 1"))
    nbformat.write(nb, jp_root_dir / "n.ipynb")
    tab = await peers("n.ipynb")
    first = tab.doc.ycells[0]["id"]
    r = await service.insert_cell("n.ipynb", 1, "b = a + 1", action_id="i1")
    await service.insert_cell("n.ipynb", 0, "# Title", cell_type="markdown", action_id="i2")
    await wait_change(tab, lambda: len(tab.doc.ycells) == 3)
    # human types inside the cell the agent is about to edit
    tab.type_at(tab.cell_text(r["cell_id"]), 0, "# human\n")
    base = "b = a + 1"
    await service.edit_cell("n.ipynb", r["cell_id"], "b = a + 2", base=base, action_id="e1")
    await wait_change(tab, lambda: str(tab.cell_text(r["cell_id"])) == "# human\nb = a + 2")
    await service.delete_cell("n.ipynb", first, action_id="d1")
    await wait_change(tab, lambda: len(tab.doc.ycells) == 2)
    view = await service.read_notebook("n.ipynb")
    assert [c["cell_type"] for c in view["cells"]] == ["markdown", "code"]

    def saved() -> bool:
        try:
            d = disk_notebook(jp_root_dir, "n.ipynb")
        except ValueError:  # half-written autosave
            return False
        return len(d["cells"]) == 2 and "".join(d["cells"][1]["source"]) == "# human\nb = a + 2"

    await until(saved, what="notebook autosave")
    nbformat.validate(nbformat.read(jp_root_dir / "n.ipynb", as_version=4))


async def test_versions_and_revert(service, peers, jp_root_dir):
    (jp_root_dir / "v.txt").write_text("one\n")
    await service.write_text("v.txt", "one\ntwo\n", action_id="a1")
    await service.write_text("v.txt", "one\ntwo\nthree\n", action_id="a2")
    vs = (await service.versions("v.txt"))["versions"]
    assert [v["origin"] for v in vs] == ["initial", "Think:a1", "Think:a2"]
    tab = await peers("v.txt")
    tab.type_at(tab.text(), 0, "H:")
    await until_live(service, "v.txt", lambda t: t.startswith("H:"))
    await service.revert("v.txt", 1, action_id="r1")
    # the revert is a diff: the human's new "H:" is not in version 1 and is removed,
    # but the revert itself is recorded and can be reverted
    await wait_change(tab, lambda: str(tab.text()) == "one\ntwo\n")
    vs = (await service.versions("v.txt"))["versions"]
    assert vs[-1]["summary"] == "revert to 1" and vs[-1]["action_id"] == "r1"


async def test_nodelay_on_room_websocket(service, peers, jp_root_dir, jp_serverapp):
    (jp_root_dir / "d.txt").write_text("")
    await peers("d.txt")
    server = jp_serverapp.web_app.settings["jupyter_server_ydoc"].ywebsocket_server
    handlers = [c for room in server.rooms.values() for c in room.clients]
    assert handlers
    for h in handlers:
        sock = h.ws_connection.stream.socket
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


async def test_ystore_not_in_cwd(service, jp_root_dir, jp_data_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (jp_root_dir / "e.txt").write_text("e")
    await service.write_text("e.txt", "ee")
    await until(lambda: (jp_data_dir / "think" / "ystore.db").exists(), what="ystore")
    assert not (tmp_path / ".jupyter_ystore.db").exists()
    assert not (jp_root_dir / ".jupyter_ystore.db").exists()


def test_origin():
    assert ydocs.origin_for("x") == "Think:x"


@pytest.mark.parametrize("missing", ["nope.txt"])
async def test_missing_file_is_an_error(service, missing):
    from jupyter_ext.collab.documents import DocumentError

    with pytest.raises(DocumentError):
        await service.read_text(missing)
