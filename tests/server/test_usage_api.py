"""Usage, attachments and whole tool outputs over the REST API and WebSocket."""

from __future__ import annotations

import base64
import json

from tornado.httpclient import HTTPClientError

from tests.waiting import until

from ..agent.test_outputs import png


async def upload(jp_fetch, session_id: str, name: str, data: bytes) -> tuple[int, dict]:
    try:
        resp = await jp_fetch(
            "api",
            "think",
            "sessions",
            session_id,
            "attachments",
            method="POST",
            body=data,
            params={"name": name},
            headers={"Content-Type": "application/octet-stream"},
            raise_error=False,
        )
    except HTTPClientError as e:
        assert e.response is not None
        resp = e.response
    return resp.code, json.loads(resp.body.decode() or "null")


async def test_image_reaches_the_vision_model_and_usage_is_served(
    api, ws, think, model_env, jp_fetch, monkeypatch
) -> None:
    monkeypatch.setenv("THINK_VISION_MODEL", "eyes-model")
    code, session = await api("POST", "sessions", {"title": "pictures"})
    sid = session["id"]
    image = png(3, 3)
    code, att = await upload(jp_fetch, sid, "chart.png", image)
    assert code == 201 and att["kind"] == "image" and att["mime"] == "image/png"
    assert att["size"] == len(image) and len(att["blob"]) == 64
    cells = {
        "kind": "cells",
        "path": "analysis.ipynb",
        "cells": [{"id": "c1", "cell_type": "code", "source": "df.plot()"}],
    }
    tab = await ws(sid)
    model_env.reply(text="A small red square.")
    code, sent = await api(
        "POST",
        f"sessions/{sid}/messages",
        {"content": "what is this?", "attachments": [att, cells]},
    )
    assert code == 201, sent
    assert [a["kind"] for a in sent["message"]["attachments"]] == ["image", "cells"]
    await until(lambda: tab.of("task_complete"), 60, "the run")
    body = model_env.requests[0]
    assert body["model"] == "eyes-model"
    parts = body["messages"][-1]["content"]
    assert "what is this?" in parts[0]["text"] and "df.plot()" in parts[0]["text"]
    assert parts[1]["image_url"]["url"] == (
        "data:image/png;base64," + base64.b64encode(image).decode()
    )
    (usage_frame,) = tab.of("usage")
    assert usage_frame["role"] == "vision" and usage_frame["model"] == "eyes-model"
    code, usage = await api("GET", f"sessions/{sid}/usage", calls=10)
    assert code == 200
    assert usage["by_role"]["vision"]["calls"] == 1
    assert usage["total"]["tokens_in"] == usage_frame["tokens_in"] > 765
    assert usage["role_models"] == {"vision": ["eyes-model"]}
    assert [c["purpose"] for c in usage["calls"]] == ["step"]
    # The history the sidebar loads carries role, model and tokens per message.
    code, page = await api("GET", f"sessions/{sid}/messages")
    reply = [m for m in page["messages"] if m["role"] == "assistant"][0]
    assert (reply["model_role"], reply["model"]) == ("vision", "eyes-model")
    assert reply["tokens_in"] == usage_frame["tokens_in"]


async def test_whole_tool_output_is_served(api, think) -> None:
    code, session = await api("POST", "sessions", {})
    sid = session["id"]
    store = think.services.store
    whole = "".join(f"line {i}\n" for i in range(20_000))
    blob = await store.save_blob(whole.encode())
    row = await store.add_message(
        sid,
        "tool",
        "[The whole output is ...] excerpts",
        tool_call_id="call_1",
        name="bash",
        output_blob=blob,
        output_size=len(whole),
    )
    code, got = await api("GET", f"sessions/{sid}/messages/{row['id']}/content")
    assert code == 200 and got["content"] == whole and got["size"] == len(whole)


async def test_bad_attachments_are_refused(api, think, jp_fetch) -> None:
    code, session = await api("POST", "sessions", {})
    sid = session["id"]
    code, err = await upload(jp_fetch, sid, "data.bin", b"\x00\x01\xfe\xff" * 20)
    assert code == 415 and "neither an image" in err["message"]
    code, err = await upload(jp_fetch, sid, "huge.png", b"\x89PNG\r\n\x1a\n" + b"0" * 6_000_000)
    assert code == 413
    code, err = await upload(jp_fetch, sid, "empty.txt", b"")
    assert code == 400
    code, err = await upload(jp_fetch, "no-such-session", "a.txt", b"hello")
    assert code == 404
    code, text = await upload(jp_fetch, sid, "notes.txt", "héllo".encode())
    assert code == 201 and text["kind"] == "file"
    bad = [
        [{"kind": "image", "blob": "0" * 64}],  # never uploaded
        [{"kind": "image", "blob": "../../etc/passwd"}],
        [{"kind": "exe", "blob": text["blob"]}],
        [text] * 11,
        [{"kind": "cells", "cells": []}],
        [{"kind": "cells", "cells": [{"source": 3}]}],
        [{"kind": "cells", "cells": [{"source": "x", "cell_type": "evil"}]}],
        "not a list",
    ]
    for attachments in bad:
        code, err = await api(
            "POST", f"sessions/{sid}/messages", {"content": "hi", "attachments": attachments}
        )
        assert code == 400, (attachments, code, err)
    # A client cannot pass text off as an image: the stored bytes decide.
    claimed = dict(text, kind="image", mime="image/png")
    code, sent = await api(
        "POST", f"sessions/{sid}/messages", {"content": "hi", "attachments": [claimed]}
    )
    assert code == 201 and sent["message"]["attachments"][0]["kind"] == "file"
    await think.services.chats.cancel(sid)


async def test_usage_and_attachments_need_auth(http_server_client, jp_base_url, api) -> None:
    code, session = await api("POST", "sessions", {})
    sid = session["id"]
    for method, path, body in (
        ("GET", f"sessions/{sid}/usage", None),
        ("POST", f"sessions/{sid}/attachments?name=a.txt", b"hello"),
    ):
        try:
            resp = await http_server_client.fetch(
                f"{jp_base_url}api/think/{path}", method=method, body=body, raise_error=False
            )
            code = resp.code
        except HTTPClientError as e:
            code = e.code
        assert code == 403, (path, code)
