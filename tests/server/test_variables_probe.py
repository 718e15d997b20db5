"""The variables probe in process (pandas and numpy, no kernel): what it reads, what it never
calls, its limits; the user expression that carries it; the text the model reads."""

from __future__ import annotations

import json
import signal
import time

import numpy as np
import pandas as pd

from jupyter_ext.variables.inspector import checked_names, expression
from jupyter_ext.variables.probe import probe
from think_kernel.approvals.policy import Policy
from think_kernel.tools.variables import render_variables


class Hang:
    def __repr__(self) -> str:
        while True:
            pass

    def __getattr__(self, name: str) -> None:
        while True:
            pass


class Huge:
    def __repr__(self) -> str:
        return "x" * 2**31


def read(ns: dict, names: list[str] | None = None, **limits: float) -> dict:
    return json.loads(probe(ns, {"names": names, "limits": limits}))


def test_frame_schema_nulls_and_a_bounded_head():
    n = 200_000
    df = pd.DataFrame({"a": np.arange(n), "b": ["word " * 40] * n, "c": [None, 1.5] * (n // 2)})
    got = read({"df": df}, ["df"])["variables"][0]
    assert got["shape"] == [n, 3]
    assert [(c["name"], c["nulls"]) for c in got["columns"]] == [("a", 0), ("b", 0), ("c", n // 2)]
    assert len(got["head"]) < 2000 and "w..." in got["head"]  # long strings cut
    assert got["head"].count("\n") == 5  # the header and five rows


def test_wide_frames_show_a_bounded_number_of_columns():
    df = pd.DataFrame(np.zeros((2, 500)))
    got = read({"df": df}, ["df"])["variables"][0]
    assert len(got["columns"]) == 20 and got["columns_omitted"] == 480


def test_arrays_stats_with_nans_and_a_sample_of_huge_ones():
    a = np.array([1.0, np.nan, 3.0])
    got = read({"a": a}, ["a"])["variables"][0]
    assert got["stats"] == {"nans": 1, "min": 1.0, "max": 3.0, "mean": 2.0, "std": 1.0}
    big = np.ones(10_000_000, dtype=np.int8)
    got = read({"big": big}, ["big"])["variables"][0]
    assert got["stats_sample"] <= 5_000_000 and got["stats"]["mean"] == 1.0
    empty = np.array([np.nan])
    assert read({"e": empty}, ["e"])["variables"][0]["stats"] == {"nans": 1}


def test_reprs_and_attributes_of_objects_are_never_touched():
    ns = {"h": Hang(), "g": Huge(), "df": pd.DataFrame({"o": [Hang(), Huge(), "ok"]})}
    started = time.monotonic()
    got = {v["name"]: v for v in read(ns)["variables"]}
    assert time.monotonic() - started < 1
    assert got["h"] == {"name": "h", "type": "test_variables_probe.Hang", "kind": "object"} or (
        got["h"]["kind"] == "object" and got["h"]["type"].endswith("Hang")
    )
    assert "<" in got["df"]["head"] and "Hang>" in got["df"]["head"] and "ok" in got["df"]["head"]


def test_a_hanging_property_is_cut_and_the_alarm_put_back():
    class Slow(pd.DataFrame):
        @property
        def shape(self):  # type: ignore[override]
            while True:
                pass

    # The user's own SIGALRM handler and timer (pytest-timeout may run one too) come back.
    def mine(*args: object) -> None:
        pass

    old = signal.signal(signal.SIGALRM, mine)
    before = signal.getitimer(signal.ITIMER_REAL)
    try:
        got = read({"s": Slow({"a": [1]}), "x": 1}, ["s", "x"], per_var=0.05)
        assert "timed out" in got["variables"][0]["error"]
        assert got["variables"][1]["value"] == "1"
        assert signal.getsignal(signal.SIGALRM) is mine
        after = signal.getitimer(signal.ITIMER_REAL)
        assert (after == before == (0.0, 0.0)) or 0 < before[0] - after[0] < 5
    finally:
        signal.signal(signal.SIGALRM, old)


def test_the_answer_stays_within_its_size_limit():
    ns = {f"v{i}": pd.DataFrame({"a": ["x" * 70] * 5}) for i in range(100)}
    text = probe(ns, {"names": None, "limits": {"max_output": 5000}})
    answer = json.loads(text)
    assert len(text) <= 5000 and answer["truncated"] and answer["not_described"]
    assert all(v.get("head_omitted") for v in answer["variables"])


def test_listing_skips_private_hidden_and_modules():
    ns = {"_x": 1, "np": np, "In": [], "keep": 2}
    names = [v["name"] for v in read_hidden(ns, {"In"})["variables"]]
    assert names == ["keep"]


def read_hidden(ns: dict, hidden: set[str]) -> dict:
    return json.loads(probe(ns, {"names": None}, hidden))


def test_names_are_identifiers_and_reach_the_kernel_as_data():
    assert checked_names(["df", "df", "x1"]) == ["df", "x1"]
    for bad in (["a;b"], ["import"], ["x" * 300], [1]):
        try:
            checked_names(bad)  # type: ignore[arg-type]
        except ValueError:
            continue
        raise AssertionError(bad)
    text = expression({"names": ["df"], "limits": {}})
    assert text.startswith("(lambda g: (exec(")
    # The expression runs the probe in its own dict: nothing lands in the caller's.
    ns: dict = {"df": pd.DataFrame({"a": [1]})}
    import IPython  # noqa: F401  (run() reads IPython's shell; here there is none)

    out = eval(text, ns)
    assert json.loads(out) == {"error": "not an IPython kernel"}
    assert set(ns) == {"df", "__builtins__"}


def test_the_text_the_model_reads():
    answer = {
        "status": "ok",
        "path": "nb.ipynb",
        "variables": [
            {
                "name": "df",
                "type": "pandas.DataFrame",
                "kind": "dataframe",
                "shape": [1000, 2],
                "columns": [
                    {"name": "a", "dtype": "int64", "nulls": 0},
                    {"name": "b", "dtype": "float64", "nulls": 3},
                ],
                "head": "   a  b\n0  1  2.0",
            },
            {"name": "n", "type": "int", "kind": "value", "value": "3"},
        ],
        "missing": ["gone"],
    }
    text = render_variables(answer)
    assert "df: pandas.DataFrame, 1,000 rows × 2 columns" in text
    assert "columns: a int64, b float64 (3 null)" in text
    assert "n: int = 3" in text and "not defined in the kernel: gone" in text
    busy = {"status": "busy", "path": "nb.ipynb", "message": "the kernel is busy"}
    assert render_variables(busy) == "nb.ipynb: the kernel is busy"


def test_inspect_variables_never_asks_under_the_default_policy():
    policy = Policy.from_settings("default", [], {})
    assert policy.check("inspect_variables", {"notebook": "a.ipynb"}, known=set()) is None


async def test_a_variable_attachment_is_checked_and_reaches_the_model_as_text():
    from tornado import web

    from jupyter_ext.attachments import checked_attachments
    from think_kernel.agent.messages import user_content

    item = {"kind": "variables", "path": "nb.ipynb", "name": "df", "text": "df: DataFrame"}
    [att] = await checked_attachments(None, [item])  # type: ignore[arg-type]
    assert att == item
    row = {"content": "what is @df?", "attachments": [att]}
    assert user_content(row, {}) == (
        'what is @df?\n\n<variable notebook="nb.ipynb">\ndf: DataFrame\n</variable>'
    )
    for bad in ({"name": "a b"}, {"text": ""}, {"text": "x" * 70_000}, {"path": 3}):
        try:
            await checked_attachments(None, [{**item, **bad}])  # type: ignore[arg-type]
        except web.HTTPError as e:
            assert e.status_code == 400
        else:
            raise AssertionError(bad)
