"""Only inert MIME types reach the page; the rest travels in the Think untrusted type."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from think_kernel.safeoutput import UNTRUSTED_MIME, safe_bundle, safe_text_bundle, scriptable

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5Erk"
    "Jggg=="
)


def test_a_figure_passes_as_it_is() -> None:
    bundle = {"image/png": PNG, "text/plain": "<Figure size 640x480 with 1 Axes>"}
    assert safe_bundle(bundle) == bundle


def test_html_goes_whole_into_the_untrusted_type() -> None:
    frame = {"text/html": "<table><tr><td>1</td></tr></table>", "text/plain": "   a\n0  1"}
    out = safe_bundle(frame)
    assert out == {UNTRUSTED_MIME: {"data": frame}, "text/plain": "   a\n0  1"}
    assert scriptable(out) == []


def test_every_scriptable_type_is_wrapped() -> None:
    for mime in ("text/html", "application/javascript", "image/svg+xml", "text/latex",
                 "application/vnd.jupyter.widget-view+json", "application/json",
                 "application/vnd.plotly.v1+json", "text/x-anything"):  # fmt: skip
        out = safe_bundle({mime: "x", "text/plain": "x"})
        assert set(out) == {UNTRUSTED_MIME, "text/plain"}, mime
        assert out[UNTRUSTED_MIME]["data"][mime] == "x"


def test_markdown_is_sanitised_in_place() -> None:
    out = safe_bundle({"text/markdown": "<img src=x onerror=alert(1)>", "text/plain": "x"})
    assert out == {"text/markdown": "&lt;img src=x onerror=alert(1)>", "text/plain": "x"}
    assert safe_text_bundle("a <b>")["text/markdown"] == "a &lt;b>"


def test_odd_values_are_not_trusted() -> None:
    out = safe_bundle({"image/png": '"><script>x</script>', "text/plain": "p"})
    assert UNTRUSTED_MIME in out
    out = safe_bundle({"text/plain": {"not": "a string"}})
    assert UNTRUSTED_MIME in out and isinstance(out["text/plain"], str)


def test_scriptable_names_what_leaked() -> None:
    assert scriptable({"text/html": "<b>", "text/plain": "b"}) == ["text/html"]
    assert scriptable({"text/markdown": "<script>1</script>"}) == ["text/markdown (unsanitised)"]


@given(st.dictionaries(st.text(max_size=30), st.one_of(st.text(max_size=30), st.integers(),
                                                        st.none()), max_size=5))  # fmt: skip
def test_any_bundle_comes_out_inert_and_saveable(data: dict[str, object]) -> None:
    out = safe_bundle(data)
    assert scriptable(out) == []
    json.dumps(out)
