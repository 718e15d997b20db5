"""MkDocs hook: every ``tests/...py::name`` and repository file a page names must exist.

The test coverage matrix is written by hand; this keeps it honest as tests are renamed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TEST = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
FILE = re.compile(r"`((?:tests|labextension|\.ci|think_kernel|jupyter_ext|bench|binder)/[\w./-]+)`")


class MissingTest(Exception):
    """A page names a test or file that is not in the repository."""


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fail the build on a named test or file that does not exist."""
    missing = []
    for path, name in TEST.findall(markdown):
        source = ROOT / path
        if not source.is_file() or not re.search(
            rf"^(?:async )?def {name}\(", source.read_text(encoding="utf-8"), re.M
        ):
            missing.append(f"{path}::{name}")
    for path in FILE.findall(markdown):
        if "node_modules" in path:
            continue  # made by npm at test time, not part of a checkout
        if "*" not in path and not (ROOT / path.rstrip("/")).exists():
            missing.append(path)
    if missing:
        raise MissingTest(f"{page.file.src_uri} names what does not exist: {missing}")
    return markdown
