"""Project instructions and skills: what people add to the agent as files.

``AGENTS.md`` files (the workspace root, the folders of the session's notebook, the user's
Jupyter config folder) join the system prompt at each request (:mod:`.instructions`). Skills in
the Agent Skills format (a folder with a ``SKILL.md``) come from ``<workspace>/.think/skills``,
the user-level Think folder (:func:`.places.user_think_dir`) and packages' entry points
(:mod:`.library`); the prompt carries their catalog (:mod:`.catalog`) and the model loads one
with the ``load_skill`` tool (:mod:`.tools`).

Shared with the other files of ``.think/``: front matter parsing (:mod:`.frontmatter`), the
places searched (:mod:`.places`) and the report of what was loaded or refused (:mod:`.report`).
"""

from .config import SkillsConfig
from .frontmatter import FrontMatterError, parse_front_matter
from .places import WORKSPACE_DIR, package_dirs, user_config_dir, user_think_dir
from .report import Found, Problem, Report

__all__ = [
    "WORKSPACE_DIR",
    "Found",
    "FrontMatterError",
    "Problem",
    "Report",
    "SkillsConfig",
    "package_dirs",
    "parse_front_matter",
    "user_config_dir",
    "user_think_dir",
]
