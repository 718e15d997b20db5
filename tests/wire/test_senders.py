"""The server builds its link frames from the wire declarations, so a wrong field fails here."""

from __future__ import annotations

from jupyter_ext.runs.owners import Owners
from think_kernel.wire.base import Frame, decode
from think_kernel.wire.link import TO_KERNEL, PingFrame


def test_a_ping_to_a_kernel_is_a_declared_frame_the_kernel_decodes() -> None:
    sent: list[tuple[str, Frame]] = []
    owners = Owners(lambda kid, frame: sent.append((kid, frame)) is None)
    owners.ping("k1")
    owners.ping("k1")
    assert [kid for kid, _ in sent] == ["k1", "k1"]
    frames = [frame for _, frame in sent]
    assert frames == [PingFrame(1), PingFrame(2)]
    assert [decode(f.to_dict(), TO_KERNEL) for f in frames] == frames
