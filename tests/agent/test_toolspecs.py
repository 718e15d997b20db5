"""Tool specs shortened for small context windows."""

from __future__ import annotations

import tempfile

from think_kernel.agent.tokens import estimate_tools
from think_kernel.agent.toolspecs import compact_spec, first_sentence, fit_specs
from think_kernel.runtime import Runtime


def test_first_sentence() -> None:
    assert first_sentence("Run bash. More text.\nArgs: x") == "Run bash."
    assert first_sentence("No full stop here\nsecond line") == "No full stop here"


def test_small_windows_get_short_specs_that_keep_every_schema() -> None:
    specs = Runtime(workspace_root=tempfile.mkdtemp(), extensions=[]).tools.specs()
    assert fit_specs(specs, 128_000) is specs  # big windows: untouched
    short = fit_specs(specs, 4_000)
    assert estimate_tools(short) < estimate_tools(specs) * 0.8
    for full, small in zip(specs, short, strict=True):
        f, s = full["function"], small["function"]
        assert s["name"] == f["name"]
        # the same parameters, types, defaults and required fields: every call stays valid
        fp, sp = f["parameters"], s["parameters"]
        assert sp.get("required") == fp.get("required")
        assert set(sp["properties"]) == set(fp["properties"])
        for name, prop in fp["properties"].items():
            assert {k: v for k, v in prop.items() if k != "description"} == sp["properties"][name]
        assert s["description"] and f["description"].startswith(s["description"].rstrip("."))
    assert compact_spec(specs[0]) == short[0] and specs[0] != short[0]  # the input is not changed
