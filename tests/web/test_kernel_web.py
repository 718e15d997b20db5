"""The research flow through a real think kernel: the cell shows the screenshot, the vision
role answers about it, the action log keeps URL and thumbnail; shutdown closes the browser."""

from __future__ import annotations

import base64
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.fake_model import FakeModel
from tests.kernel.conftest import Kernel, kernel_env, markdown_of, start_kernel, workspace_in
from think_kernel.store.location import store_file

from .flow import TOOLS_IN_ORDER, check_actions, check_model_requests, script, web_env
from .servers import Server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _chromium_under(pid: int) -> list[psutil.Process]:
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [p for p in kids if "chrom" in p.name()]


@pytest.fixture
def web_kernel(
    tmp_path: Path, fake_model: FakeModel, site: Server, brave: Server
) -> Iterator[Kernel]:
    env = kernel_env(tmp_path, fake_model)
    env.update(web_env(site, brave))
    kernel = start_kernel(workspace_in(tmp_path), env)
    try:
        yield kernel
    finally:
        if kernel.km.is_alive():
            kernel.stop()


def test_search_browse_screenshot_interact_scrape_in_a_cell(
    web_kernel: Kernel, fake_model: FakeModel, site: Server
) -> None:
    script(fake_model, site)
    reply, outputs = web_kernel.execute("Research the test site and order a pear for Ada.", 120)
    assert reply["status"] == "ok", reply

    # the screenshot is in the cell, as a PNG
    images = [
        m["content"]["data"]["image/png"]
        for m in outputs
        if m["msg_type"] == "display_data" and "image/png" in m["content"]["data"]
    ]
    assert len(images) == 1
    png = base64.b64decode(images[0])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    shown = [m for m in outputs if "image/png" in m["content"].get("data", {})][0]
    assert "think" not in shown["content"]["data"]  # our metadata stays out of the notebook
    text = "\n".join(
        m["content"]["data"]["text/markdown"]
        for m in outputs
        if m["msg_type"] in ("display_data", "update_display_data")
        and "text/markdown" in m["content"]["data"]
    )
    for tool in set(TOOLS_IN_ORDER):
        assert f"**{tool}**" in text, tool
    assert "Ada ordered a pear" in markdown_of(outputs)

    check_model_requests(fake_model)

    # the action log (in the kernel's local store) keeps the URL and a thumbnail blob
    db = store_file(web_kernel.workspace)
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        actions = [dict(r) for r in conn.execute("SELECT * FROM action_log ORDER BY ts")]
        usage = [dict(r) for r in conn.execute("SELECT * FROM usage WHERE purpose = 'vision'")]
    thumb_key = check_actions(actions, site)
    # the vision call's tokens are recorded like every model call's, against its message
    ((vision,),) = [usage]
    assert vision["role"] == "vision" and vision["model"] == "fake-vision"
    assert vision["tokens_in"] > 0 and vision["message_id"]
    thumb = (db.parent / "blobs" / thumb_key[:2] / thumb_key).read_bytes()
    assert thumb[:8] == b"\x89PNG\r\n\x1a\n" and len(thumb) < len(png)

    # one browser for the kernel; shutting the kernel down closes it
    pid = web_kernel.km.provisioner.process.pid  # type: ignore[union-attr]
    browsers = _chromium_under(pid)
    assert browsers, "the kernel's browser should still be open"
    web_kernel.stop()
    deadline = time.monotonic() + 20
    while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in browsers):
        assert time.monotonic() < deadline, "the browser outlived its kernel"
        time.sleep(0.1)  # polling other processes' exit; there is no event to wait on


def test_status_names_the_search_provider_and_the_browser(
    tmp_path: Path, fake_model: FakeModel, site: Server, brave: Server
) -> None:
    env = kernel_env(tmp_path, fake_model)
    env.pop("BRAVE_API_KEY", None)
    env.pop("THINK_SEARXNG_URL", None)
    kernel = start_kernel(workspace_in(tmp_path), env)
    try:
        reply, outputs = kernel.execute("%think_status")
        assert reply["status"] == "ok"
        status = markdown_of(outputs) or "".join(
            m["content"]["data"].get("text/markdown", "")
            for m in outputs
            if m["msg_type"] in ("display_data", "execute_result")
        )
        assert "**web search**: **not configured**" in status
        assert "BRAVE_API_KEY" in status and "THINK_SEARXNG_URL" in status
        assert "**browser**" in status and "starts on first use" in status
        assert "public addresses only" in status
    finally:
        kernel.stop()
