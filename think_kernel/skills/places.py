"""Where Think looks for what people and packages add: the workspace's ``.think/`` folder,
the user-level Think folder, the user-level Jupyter config folder and package entry points.

    user_think_dir() / "skills"          # ~/.local/share/jupyter/think/skills
    package_dirs("think_kernel.skills")  # [("package:mypkg", Path(...)), ...]
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from types import ModuleType

from ..entrypoints import published

log = logging.getLogger(__name__)

#: The folder inside a workspace holding its skills, agent types and self-written tools.
WORKSPACE_DIR = ".think"


def user_think_dir() -> Path:
    """The user-level Think folder, ``<jupyter_data_dir>/think`` (``JUPYTER_DATA_DIR`` moves it)."""
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "think"


def user_config_dir() -> Path:
    """The user-level Jupyter config folder (``JUPYTER_CONFIG_DIR`` moves it)."""
    from jupyter_core.paths import jupyter_config_dir

    return Path(jupyter_config_dir())


def package_dirs(group: str) -> list[tuple[str, Path]]:
    """Folders that installed packages publish in an entry point group, as (source, path).

    An entry point names a path (``str`` or ``os.PathLike``) or a package, whose own folder is
    used. One that fails to load is logged and skipped: a broken package never stops a request.
    """
    found: list[tuple[str, Path]] = []
    for ep in published(group):
        dist = ep.dist.name if ep.dist is not None else ep.name
        try:
            obj = ep.load()
        except Exception:
            log.exception("entry point %s in %s failed to load", ep.name, group)
            continue
        if isinstance(obj, ModuleType) and getattr(obj, "__path__", None):
            path = Path(list(obj.__path__)[0])
        elif isinstance(obj, str | os.PathLike):
            path = Path(obj)
        else:
            log.warning("entry point %s in %s is not a folder: %r", ep.name, group, obj)
            continue
        found.append((f"package:{dist}", path))
    return found
