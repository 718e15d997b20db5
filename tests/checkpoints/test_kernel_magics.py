"""``%think_checkpoints`` and ``%think_rewind`` in a real think kernel (a think notebook):
the kernel records the turn's checkpoint, lists it, and rewinds the files."""

from __future__ import annotations

from tests.fake_model import FakeModel
from tests.kernel.conftest import (  # noqa: F401  (fixtures)
    Kernel,
    fm,
    markdown_of,
    model,
    shared_kernel,
)


def test_checkpoints_and_rewind_in_a_think_notebook(
    shared_kernel: Kernel,  # noqa: F811
    model: FakeModel,  # noqa: F811
) -> None:
    ws = shared_kernel.workspace
    (ws / "keep.py").write_text("x = 1\n")
    model.reply(tool_calls=[("read_file", {"path": "keep.py"})])
    model.reply(
        tool_calls=[
            ("edit_file", {"path": "keep.py", "old_string": "1", "new_string": "2"}),
            ("write_file", {"path": "made.txt", "content": "new\n"}),
        ]
    )
    model.reply(text="done")
    reply, _ = shared_kernel.execute("change keep.py and make made.txt")
    assert reply["status"] == "ok" and (ws / "made.txt").exists()

    _, outputs = shared_kernel.execute("%think_checkpoints")
    listed = markdown_of(outputs)
    assert "change keep.py" in listed and "made.txt" in listed and "keep.py" in listed

    reply, outputs = shared_kernel.execute("%think_rewind --files")
    assert reply["status"] == "ok", reply
    said = markdown_of(outputs)
    assert "Deleted `made.txt`" in said and "Restored `keep.py`" in said, said
    assert not (ws / "made.txt").exists() and (ws / "keep.py").read_text() == "x = 1\n"
