"""Fuzz the REST API from its OpenAPI document (hypothesis): no input may cause a 5xx."""

from __future__ import annotations

import asyncio
import json
import re
import urllib.error
import urllib.parse
import urllib.request

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_ext.openapi import OPENAPI

from .conftest import TOKEN

pytestmark = pytest.mark.timeout(240)
METHODS = ["GET", "POST", "PATCH", "DELETE", "PUT"]


@pytest.fixture
def think_config():
    # Runs started by fuzzed messages fail fast (no such kernel) instead of starting kernels.
    return {"kernel_name": "no-such-kernel", "retry_delays": [], "heartbeat_interval": 0.5}


json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=40),
)
json_value = st.recursive(
    json_leaf,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
weird_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


def _body(op: dict) -> st.SearchStrategy:
    props = (
        op.get("requestBody", {})
        .get("content", {})
        .get("application/json", {})
        .get("schema", {})
        .get("properties", {})
    )
    typed = st.fixed_dictionaries(
        {}, optional={name: st.one_of(json_value, weird_text) for name in props}
    ).map(json.dumps)
    return st.one_of(
        st.none(),
        typed,
        json_value.map(json.dumps),
        st.binary(max_size=80),
        weird_text,
        st.just('{"content": "\\ud800"}'),
        st.just('{"title": Infinity}'),
    )


def _requests(ids: dict[str, list[str]]) -> st.SearchStrategy:
    ops = [
        (path, method.upper(), op)
        for path, item in OPENAPI["paths"].items()
        for method, op in item.items()
    ]

    @st.composite
    def build(draw):
        path, method, op = draw(st.sampled_from(ops))
        if draw(st.integers(0, 9)) == 0:
            method = draw(st.sampled_from(METHODS))

        def fill(m: re.Match) -> str:
            name = m.group(1)
            value = draw(st.one_of(st.sampled_from(ids.get(name, ["x"])), weird_text))
            return urllib.parse.quote(value, safe="")

        url_path = re.sub(r"\{(\w+)\}", fill, path)
        query = {}
        for p in op.get("parameters", []):
            if p["in"] == "query" and draw(st.booleans()):
                query[p["name"]] = draw(
                    st.one_of(
                        weird_text,
                        st.integers(-10, 10**12).map(str),
                        st.floats(allow_nan=True, allow_infinity=True).map(str),
                        st.sampled_from(["true", "false", "1", "0"]),
                    )
                )
        return method, url_path, query, draw(_body(op))

    return build()


async def test_no_input_causes_a_5xx(api, think, jp_http_port, jp_base_url):
    _, s = await api("POST", "sessions", {"title": "fuzz"})
    msg = await think.services.store.add_message(s["id"], "user", "hello")
    ids = {"session_id": [s["id"]], "message_id": [msg["id"]], "approval_id": ["ap1"]}
    base = f"http://127.0.0.1:{jp_http_port}{jp_base_url}api/think"
    seen: list[int] = []

    @settings(
        max_examples=400, deadline=None, derandomize=False, suppress_health_check=list(HealthCheck)
    )
    @given(_requests(ids))
    def check(req) -> None:
        method, path, query, body = req
        url = base + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
        if data is None and method in ("POST", "PATCH", "PUT"):
            data = b""
        request = urllib.request.Request(
            url, data=data, method=method, headers={"Authorization": f"token {TOKEN}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=20) as resp:
                code = resp.status
        except urllib.error.HTTPError as e:
            code = e.code
            if code in (400, 409, 413):  # our handlers' rejections carry a JSON message
                detail = e.read().decode("utf-8", "replace")
                assert json.loads(detail).get("message"), (method, url, detail)
        seen.append(code)
        assert code < 500, (method, url, body, code)

    await asyncio.to_thread(check)
    assert len(seen) >= 400 and {200, 400, 404} <= set(seen)
    # and the server still works
    code, _ = await api("GET", "sessions")
    assert code == 200
