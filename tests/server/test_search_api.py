"""``GET /api/think/search``: the workspace's sessions, clear errors, auth, deletion."""

from __future__ import annotations

from tornado.httpclient import HTTPClientError

from think_kernel.store import Store, location


async def test_search_finds_messages_of_every_session_and_forgets_deleted_ones(api, think) -> None:
    store = think.services.store
    code, first = await api("POST", "sessions", {"title": "formats"})
    assert code == 201
    await store.add_message(first["id"], "user", "We decided: results are stored as Parquet.")
    code, second = await api("POST", "sessions", {"title": "later"})
    await store.add_message(second["id"], "tool", "ok", name="write_file", result_summary="parquet")

    code, body = await api("GET", "search", q="parquet", limit="5")
    assert code == 200, body
    assert body["query"] == "parquet" and body["notice"] == ""
    assert {h["session_id"] for h in body["hits"]} == {first["id"], second["id"]}
    said = next(h for h in body["hits"] if h["session_id"] == first["id"])
    assert said["title"] == "formats" and said["role"] == "user" and said["kind"] == "chat"
    start, end = said["spans"][0]
    assert said["snippet"][start:end] == "Parquet"
    assert said["link"] == f"/api/think/sessions/{first['id']}/messages?before=2&limit=20"
    code, page = await api(
        "GET", f"sessions/{first['id']}/messages", before=str(said["seq"] + 1), limit="20"
    )
    assert code == 200 and page["messages"][-1]["id"] == said["message_id"]

    code, _ = await api("DELETE", f"sessions/{first['id']}")
    assert code == 204
    code, body = await api("GET", "search", q="parquet")
    assert [h["session_id"] for h in body["hits"]] == [second["id"]]


async def test_bad_queries_are_clear_answers_never_500(api, think) -> None:
    sid = (await think.services.store.create_session())["id"]
    await think.services.store.add_message(sid, "user", "we use c and c sharp")
    code, body = await api("GET", "search", q="c++")
    assert code == 200 and body["notice"].startswith("not valid search syntax") and body["hits"]
    for params in ({"q": "()"}, {"q": ""}, {}, {"q": "x", "limit": "0"}, {"q": "x", "limit": "a"}):
        code, body = await api("GET", "search", **params)
        assert code == 400, (params, code, body)
        assert body["message"], body


async def test_search_sees_neither_other_workspaces_nor_anonymous_callers(
    api, think, jp_root_dir, tmp_path, http_server_client, jp_base_url
) -> None:
    other_root = tmp_path / "other-workspace"
    other_root.mkdir()
    other = await Store.open(location.store_file(other_root))
    assert other.path != think.services.store.path
    await other.add_message((await other.create_session())["id"], "user", "zeppelin plans")
    await other.close()
    sid = (await think.services.store.create_session())["id"]
    await think.services.store.add_message(sid, "user", "blimp plans")
    code, body = await api("GET", "search", q="zeppelin OR blimp")
    assert code == 200 and [h["session_id"] for h in body["hits"]] == [sid]

    try:
        resp = await http_server_client.fetch(
            f"{jp_base_url}api/think/search?q=blimp", raise_error=False
        )
        code = resp.code
    except HTTPClientError as e:
        code = e.code
    assert code == 403
