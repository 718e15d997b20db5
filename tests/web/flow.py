"""The research flow both end-to-end tests script: search -> browse -> screenshot (asking the
vision role) -> fill a form and read the result -> scrape a table."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.fake_model import FakeModel, Reply

from .servers import Server

VISION_MODEL = "fake-vision"
TOOLS_IN_ORDER = [
    "web_search",
    "browse_url",
    "screenshot",
    "browse_url",
    "interact_with_page",
    "interact_with_page",
    "interact_with_page",
    "scrape_page",
]


def web_env(site: Server, brave: Server) -> dict[str, str]:
    """The web tools' environment names, pointing at the local fakes."""
    return {
        "BRAVE_API_KEY": "test-brave-key",
        "THINK_BRAVE_URL": brave.origin + "/res/v1",
        "THINK_BROWSER_ALLOW": f"{site.authority},{brave.authority}",
        "THINK_VISION_MODEL": VISION_MODEL,
    }


def script(fm: FakeModel, site: Server) -> None:
    """Queue the model's replies; the vision role's call is an internal one (its own purpose)."""
    fm.internal = lambda body: Reply(
        text="The banner is red." if body["_purpose"] == "vision" else "(fake internal answer)"
    )
    fm.reply(tool_calls=[("web_search", {"query": "think test site", "count": 2})])
    fm.reply(tool_calls=[("browse_url", {"url": site.origin + "/"})])
    fm.reply(tool_calls=[("screenshot", {"question": "What colour is the banner?"})])
    fm.reply(tool_calls=[("browse_url", {"url": site.origin + "/form"})])
    fm.reply(
        tool_calls=[("interact_with_page", {"action": "type", "text": "Your name", "value": "Ada"})]
    )
    fm.reply(
        tool_calls=[
            ("interact_with_page", {"action": "select", "selector": "#fruit", "value": "pear"})
        ]
    )
    fm.reply(tool_calls=[("interact_with_page", {"action": "click", "text": "Send order"})])
    fm.reply(
        tool_calls=[
            (
                "scrape_page",
                {"url": site.origin + "/table", "selectors": {"prices": "table#prices"}},
            )
        ]
    )
    fm.reply(text="Ada ordered a pear; cherries cost 7.00 a box.")


def check_model_requests(fm: FakeModel) -> None:
    """What the model (and the vision role) were sent."""
    vision = [r for r in fm.internal_requests if r.get("model") == VISION_MODEL]
    assert len(vision) == 1, [r.get("model") for r in fm.internal_requests]
    assert vision[0]["_purpose"] == "vision"
    assert all(r.get("model") != VISION_MODEL for r in fm.requests)
    parts = vision[0]["messages"][-1]["content"]
    assert parts[0] == {"type": "text", "text": "What colour is the banner?"}
    url = parts[1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "tools" not in vision[0]
    last = fm.requests[-1]
    tool_texts = [m["content"] for m in last["messages"] if m["role"] == "tool"]
    assert len(tool_texts) == len(TOOLS_IN_ORDER)
    assert "1. Result 1 for think test site" in tool_texts[0]
    assert "The magic word is xylophone." in tool_texts[1]
    assert "Vision model (fake-vision)" in tool_texts[2] and "The banner is red." in tool_texts[2]
    assert "Thanks Ada, one pear is on its way" in tool_texts[6]
    data = json.loads(tool_texts[7].split(":\n", 1)[1])
    assert data["prices"][0][2] == {"Item": "Cherries", "Price": "7.00", "Unit": "box"}


def check_actions(actions: list[dict[str, Any]], site: Server) -> str:
    """The action log: every call, the screenshot with its URL and thumbnail; returns the
    thumbnail's blob key."""
    assert [a["tool"] for a in actions] == TOOLS_IN_ORDER, actions
    assert all(a["success"] for a in actions), actions
    shot = actions[2]
    assert shot["output_summary"].startswith(f"screenshot: {site.origin}/ asked vision, thumbnail=")
    return str(shot["output_summary"].rsplit("thumbnail=", 1)[1])
