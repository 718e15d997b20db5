"""Front matter, skill validation and the catalog budget (pure, in-process)."""

from __future__ import annotations

import pytest

from think_kernel.safefs import SafeReader
from think_kernel.skills import FrontMatterError, parse_front_matter
from think_kernel.skills.catalog import catalog_text
from think_kernel.skills.library import LoadedSkill
from think_kernel.skills.skill import InvalidSkill, Skill, parse_skill


def test_front_matter() -> None:
    meta, body = parse_front_matter("---\nname: a\ndescription: b c\n---\n\nBody\n")
    assert meta == {"name": "a", "description": "b c"} and body == "Body\n"
    assert parse_front_matter("\ufeff---\n---\nx")[0] == {}
    for text, says in (
        ("no front matter", "must start"),
        ("---\nname: a\n", "not closed"),
        ("---\n- a\n---\n", "mapping"),
        ("---\nname: [a\n---\n", "invalid YAML"),
        ("---\nx: !!python/object:os.system ls\n---\n", "invalid YAML"),
    ):
        with pytest.raises(FrontMatterError, match=says):
            parse_front_matter(text)


def _skill(text: str, folder: str = "csv-tips") -> Skill:
    return parse_skill(folder, text, source="workspace", where=f".think/skills/{folder}")


def test_skill_validation() -> None:
    skill = _skill("---\nname: csv-tips\ndescription: >\n  Read CSV\n  files.\n---\nUse pandas.\n")
    assert (skill.name, skill.description, skill.instructions) == (
        "csv-tips",
        "Read CSV files.",
        "Use pandas.",
    )
    for text, folder, says in (
        ("---\ndescription: d\n---\n", "csv-tips", "'name' is missing"),
        ("---\nname: csv-tips\n---\n", "csv-tips", "'description' is missing"),
        ("---\nname: other\ndescription: d\n---\n", "csv-tips", "does not match its folder"),
        ("---\nname: Csv_Tips\ndescription: d\n---\n", "Csv_Tips", "lowercase"),
        ("---\nname: a--b\ndescription: d\n---\n", "a--b", "lowercase"),
        (f"---\nname: {'a' * 65}\ndescription: d\n---\n", "a" * 65, "at most 64"),
        (f"---\nname: csv-tips\ndescription: {'d' * 1025}\n---\n", "csv-tips", "at most 1024"),
        ("---\nname: [x\n---\n", "csv-tips", "invalid YAML"),
    ):
        with pytest.raises(InvalidSkill, match=says):
            _skill(text, folder)


def _loaded(name: str, description: str) -> LoadedSkill:
    skill = Skill(name, description, "workspace", f".think/skills/{name}", "")
    return LoadedSkill(skill, SafeReader("/"))


def test_catalog_budget() -> None:
    assert catalog_text([], 8000) == ""
    skills = [_loaded(f"skill-{i:02d}", "x" * 100) for i in range(50)]
    text = catalog_text(skills, 8000)
    assert text.count("- skill-") == 50 and len(text) <= 8000
    small = catalog_text(skills, 1500)
    assert len(small) <= 1500
    # Those that do not fit are still named, so the model can load them.
    assert "- skill-00: " in small and "no room for their descriptions" in small
    assert all(f"skill-{i:02d}" in small for i in range(50))
    tiny = catalog_text(skills, 900)
    assert tiny.endswith("more skills, left out for space\n") and len(tiny) <= 900
