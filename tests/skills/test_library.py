"""Finding skills and AGENTS.md files on disk, the skill tools and the approval policy for
``.think/`` (in-process: real files, no processes)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from think_kernel.approvals import Policy
from think_kernel.approvals.describe import describe_call
from think_kernel.skills.config import SkillsConfig
from think_kernel.skills.instructions import ProjectInstructions, folders_of
from think_kernel.skills.library import SkillLibrary
from think_kernel.skills.session import SessionSkills
from think_kernel.skills.tools import load_skill, read_skill_file
from think_kernel.skills.trust import SkillTrust
from think_kernel.tools.base import ToolContext, ToolError
from think_kernel.tools.services import ToolServices
from think_kernel.tools.workspace import LocalWorkspace

GOOD = "---\nname: {name}\ndescription: {description}\n---\n{body}\n"


def write_skill(base: Path, name: str, description: str = "d", body: str = "Do it.") -> Path:
    folder = base / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(GOOD.format(name=name, description=description, body=body))
    return folder


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    ws = tmp_path / "ws"
    (ws / ".think" / "skills").mkdir(parents=True)
    return {
        "ws": ws,
        "user": tmp_path / "user-skills",
        "pkg": tmp_path / "pkg-skills",
        "config": tmp_path / "config",
        "outside": tmp_path / "outside",
    }


def session(
    places: dict[str, Path], path: str = "", trust: SkillTrust | None = None, **limits: int
) -> SessionSkills:
    """A session's skills; workspace skills trusted as they are unless ``trust`` is given
    (these tests are about finding skills; ``test_trust`` is about who approved them)."""
    config = SkillsConfig(**limits)
    library = SkillLibrary(
        places["ws"],
        config,
        user_dir=places["user"],
        packages=lambda: [("package:demo", places["pkg"])],
        trust=trust or SkillTrust(trust_all=True),
    )
    instructions = ProjectInstructions(places["ws"], config, user_dir=places["config"])
    return SessionSkills(library, instructions, path)


def test_sources_precedence_and_invalid(places: dict[str, Path]) -> None:
    skills = places["ws"] / ".think" / "skills"
    write_skill(skills, "csv-tips", "Workspace CSV tips.")
    write_skill(places["user"], "csv-tips", "User CSV tips.")
    write_skill(places["user"], "plots", "Plot well.")
    write_skill(places["pkg"], "sql", "Query well.")
    (skills / "broken").mkdir()
    (skills / "broken" / "SKILL.md").write_text("---\nname: [x\n---\n")
    (skills / "empty").mkdir()
    (skills / "notes.txt").write_text("not a skill")
    places["outside"].mkdir()
    write_skill(places["outside"], "evil", "Escapes.")
    os.symlink(places["outside"] / "evil", skills / "evil")
    scan = session(places).scan()
    assert {n: s.skill.source for n, s in scan.skills.items()} == {
        "csv-tips": "workspace",
        "plots": "user",
        "sql": "package:demo",
    }
    assert scan.skills["csv-tips"].skill.description == "Workspace CSV tips."
    reasons = {p.name: p.reason for p in scan.report.invalid}
    assert "invalid YAML" in reasons["broken"]
    assert reasons["empty"] == "the folder has no SKILL.md"
    assert "is a link" in reasons["evil"]
    rows = dict(session(places).status_rows())  # %think_status
    assert rows["instructions"] == "no AGENTS.md"
    assert "`csv-tips` (workspace)" in rows["skills"] and "`sql` (package:demo)" in rows["skills"]
    assert "`broken` **invalid** (workspace: invalid YAML" in rows["skills"]


def test_changes_seen_at_next_scan(places: dict[str, Path]) -> None:
    skills = session(places)
    assert skills.find("csv-tips") is None
    folder = write_skill(places["ws"] / ".think" / "skills", "csv-tips", "One.")
    assert skills.find("csv-tips").skill.description == "One."  # type: ignore[union-attr]
    (folder / "SKILL.md").write_text(GOOD.format(name="csv-tips", description="Two!", body="b"))
    assert skills.find("csv-tips").skill.description == "Two!"  # type: ignore[union-attr]
    (folder / "SKILL.md").write_text("x" * 300)
    skills.library.config.skill_max_bytes = 200
    assert skills.find("csv-tips") is None
    assert skills.last_scan.report.invalid[0].reason == "SKILL.md is too long"


def test_skill_file_links_stay_inside(places: dict[str, Path]) -> None:
    folder = write_skill(places["ws"] / ".think" / "skills", "csv-tips")
    (folder / "references").mkdir()
    (folder / "references" / "api.md").write_text("the API")
    places["outside"].mkdir()
    (places["outside"] / "secret").write_text("secret")
    os.symlink(places["outside"] / "secret", folder / "references" / "leak.md")
    # A SKILL.md that is a link out of its folder (to another file of the workspace) too.
    (places["ws"] / "x.md").write_text(GOOD.format(name="linked", description="d", body="b"))
    (places["ws"] / ".think" / "skills" / "linked").mkdir()
    os.symlink(places["ws"] / "x.md", places["ws"] / ".think" / "skills" / "linked" / "SKILL.md")
    skills = session(places)
    assert skills.find("linked") is None
    assert "link" in {p.name: p.reason for p in skills.last_scan.report.invalid}["linked"]
    files = skills.find("csv-tips").files  # type: ignore[union-attr]
    assert files.read_bytes("references/api.md") == b"the API"
    for bad in ("references/leak.md", "../../../x.md", "/etc/passwd"):
        with pytest.raises(OSError):
            files.read_bytes(bad)


async def test_tools(places: dict[str, Path]) -> None:
    folder = write_skill(places["ws"] / ".think" / "skills", "csv-tips", "d", "Use pandas.")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "check.py").write_text("print('ok')\n")
    (folder / "big.txt").write_text("x" * 100)
    ctx = ToolContext(
        session_id="s",
        workspace=LocalWorkspace(places["ws"]),
        services=ToolServices(skills=session(places, file_max_bytes=50)),
    )
    out = await load_skill(ctx, "csv-tips")
    assert "Use pandas." in out.text and ".think/skills/csv-tips/" in out.text
    assert "scripts/check.py" in out.text
    assert (await read_skill_file(ctx, "csv-tips", "scripts/check.py")).text == "print('ok')\n"
    for name, path, code in (
        ("nope", "x", "NO_SUCH_SKILL"),
        ("csv-tips", "../../../etc/passwd", "UNSAFE_PATH"),
        ("csv-tips", "missing.md", "NOT_FOUND"),
        ("csv-tips", "big.txt", "TOO_LARGE"),
    ):
        with pytest.raises(ToolError) as e:
            await read_skill_file(ctx, name, path)
        assert e.value.code == code


def test_slash_name(places: dict[str, Path]) -> None:
    write_skill(places["ws"] / ".think" / "skills", "csv-tips", "d", "Use pandas.")
    skills = session(places)
    text, name = skills.expand("/csv-tips read data.csv")
    assert name == "csv-tips" and text.startswith("read data.csv") and "Use pandas." in text
    assert skills.expand("/unknown hi") == ("/unknown hi", None)
    assert skills.expand("a /csv-tips") == ("a /csv-tips", None)


def test_agents_md(places: dict[str, Path]) -> None:
    ws = places["ws"]
    assert folders_of("a/b/nb.ipynb") == ["a/b", "a", ""]
    assert folders_of("") == [""] and folders_of("../x/nb.ipynb") == [""]
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("Root rules.")
    (ws / "a" / "b" / "AGENTS.md").write_text("Nearest rules.")
    places["config"].mkdir()
    (places["config"] / "AGENTS.md").write_text("User rules.")
    skills = session(places, "a/b/nb.ipynb")
    text = skills.prompt()
    assert text.index("Nearest rules.") < text.index("Root rules.") < text.index("User rules.")
    assert [f.source for f in skills.last_instructions.loaded] == ["workspace", "workspace", "user"]
    # A link out of the workspace is never followed.
    places["outside"].mkdir()
    (places["outside"] / "AGENTS.md").write_text("Planted.")
    os.symlink(places["outside"] / "AGENTS.md", ws / "a" / "AGENTS.md")
    assert "Planted." not in skills.prompt()
    assert [p.path for p in skills.last_instructions.invalid] == ["a/AGENTS.md"]
    # Bounded, and said so.
    (ws / "AGENTS.md").write_text("R" * 5000)
    cut = session(places, "", instructions_max_chars=1000)
    text = cut.prompt()
    assert "R" * 1000 in text and "R" * 1001 not in text and "was cut here" in text
    assert cut.last_instructions.loaded[0].note.startswith("cut to 1000")
    assert [p.reason for p in cut.last_instructions.invalid] == [
        "left out: the limit c.SkillsConfig.instructions_max_chars was reached"
    ]


async def test_policy_asks_for_think_files(tmp_path: Path) -> None:
    default = Policy(mode="default", always=frozenset({"write_file"}))
    for tool, path in (
        ("write_file", ".think/skills/a/SKILL.md"),
        ("edit_file", "./.think/x"),
        ("delete_file", "a/../.think/tools/t.py"),
    ):
        assert "steers the agent" in (default.check(tool, {"path": path}) or "")
    assert default.check("write_file", {"path": "thinking.md"}) is None
    assert default.check("read_file", {"path": ".think/skills/a/SKILL.md"}) is None
    assert Policy(mode="auto").check("write_file", {"path": ".think/skills/a/SKILL.md"}) is None
    allowed = Policy.from_settings(
        "default",
        [{"tool": "write_file", "arg": "path", "glob": ".think/skills/**", "action": "allow"}],
    )
    assert allowed.check("write_file", {"path": ".think/skills/a/SKILL.md"}) is None
    content = "---\nname: a\ndescription: d\n---\nSteps.\n"
    summary, diff = await describe_call(
        "write_file",
        {"path": ".think/skills/a/SKILL.md", "content": content},
        LocalWorkspace(tmp_path),
    )
    assert summary == "create skill 'a' (.think/skills/a/SKILL.md)" and "+Steps." in diff


def test_store_move_leaves_skills(tmp_path: Path) -> None:
    """The move of an old store out of ``<root>/.think`` leaves skills and tools there."""
    from think_kernel.store import location

    root = tmp_path / "ws"
    write_skill(root / ".think" / "skills", "csv-tips")
    (root / ".think" / "tools").mkdir()
    (root / ".think" / "think.db").write_bytes(b"old store")
    folder = tmp_path / "store"
    location.prepare(folder, root)
    assert (root / ".think" / "skills" / "csv-tips" / "SKILL.md").is_file()
    assert (root / ".think" / "tools").is_dir() and not (root / ".think" / "think.db").exists()
    assert (folder / "think.db").read_bytes() == b"old store"


def test_package_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed package publishes a folder of skills in the ``think_kernel.skills``
    group (a real distribution on ``sys.path``, found by importlib.metadata)."""
    from think_kernel.skills.library import ENTRY_POINT_GROUP
    from think_kernel.skills.places import package_dirs

    site = tmp_path / "site"
    write_skill(site / "demo_think_skills", "sql-tips", "Query well.")
    (site / "demo_think_skills" / "__init__.py").write_text("")
    info = site / "demo_think_skills-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-think-skills\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\ndemo = demo_think_skills\nbroken = no_such_module_here\n"
    )
    monkeypatch.syspath_prepend(str(site))
    found = package_dirs(ENTRY_POINT_GROUP)  # the broken one is logged and skipped
    assert found == [("package:demo-think-skills", site / "demo_think_skills")]
    places = {"ws": tmp_path / "ws", "user": tmp_path / "u"}
    (places["ws"]).mkdir()
    library = SkillLibrary(places["ws"], SkillsConfig(), user_dir=places["user"])
    assert library.scan().skills["sql-tips"].skill.source == "package:demo-think-skills"
