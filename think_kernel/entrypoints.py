"""The entry points of one group, found without parsing every installed package's.

    for ep in published("think_kernel.skills"):
        obj = ep.load()

``importlib.metadata.entry_points(group=...)`` parses the ``entry_points.txt`` of every
installed distribution, which with a JupyterLab's worth of packages is slow, and a runtime
asks for two groups (extensions and skills) on its way to its first request. Here each
folder on ``sys.path`` is listed, the files are searched for the group's section header, and
only the distributions that name it are parsed, by ``importlib.metadata`` itself.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from importlib.metadata import Distribution, EntryPoint, PathDistribution, distributions
from pathlib import Path


def _naming(header: str) -> Iterator[Distribution]:
    """The installed distributions whose ``entry_points.txt`` has the section ``header``.

    Each folder on ``sys.path`` is listed and its ``*.dist-info`` / ``*.egg-info`` files read
    directly: ``distributions()`` makes a few pathlib objects per file. Anything else on
    ``sys.path`` (a zip) is searched the usual way.
    """
    want = header.encode()
    for entry in sys.path:
        folder = entry or "."
        try:
            names = os.listdir(folder)
        except NotADirectoryError:
            for dist in distributions(path=[entry]):
                if header in (dist.read_text("entry_points.txt") or ""):
                    yield dist
            continue
        except OSError:
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(folder, name, "entry_points.txt"), "rb") as f:
                    text = f.read()
            except OSError:
                continue
            if want in text:
                yield PathDistribution(Path(folder, name))


def published(group: str) -> list[EntryPoint]:
    """The entry points of ``group``, each once (a distribution may be twice on ``sys.path``)."""
    found, seen = [], set()
    for dist in _naming(f"[{group}]"):
        for ep in dist.entry_points.select(group=group):
            if (ep.name, ep.value) not in seen:
                seen.add((ep.name, ep.value))
                found.append(ep)
    return found
