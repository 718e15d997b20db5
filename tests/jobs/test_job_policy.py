"""The approval policy treats a background job as the command it runs: strict mode asks
before one, a rule about ``bash`` commands governs jobs too, and reading a job never asks."""

from __future__ import annotations

from think_kernel.approvals.policy import Policy

KNOWN = ["bash", "run_job", "stop_job", "job_status", "job_output"]


def test_strict_mode_asks_before_a_job_and_not_before_reading_one() -> None:
    strict = Policy.from_settings("strict")
    assert strict.check("run_job", {"command": "python train.py"}, known=KNOWN)
    assert strict.check("stop_job", {"name": "train"}, known=KNOWN)
    assert strict.check("job_status", {}, known=KNOWN) is None
    assert strict.check("job_output", {"name": "train"}, known=KNOWN) is None
    assert Policy.from_settings("default").check("run_job", {"command": "ls"}, known=KNOWN) is None


def test_a_rule_about_bash_commands_governs_jobs() -> None:
    rule = {"tool": "bash", "arg": "command", "regex": r"rm\s"}
    policy = Policy.from_settings("default", [rule])
    why = policy.check("run_job", {"command": "rm -rf data"}, known=KNOWN)
    assert why is not None and "rm" in why
    assert policy.check("run_job", {"command": "ls data"}, known=KNOWN) is None
    allow = Policy.from_settings("strict", [{"tool": "bash", "action": "allow"}])
    assert allow.check("run_job", {"command": "make"}, known=KNOWN) is None
