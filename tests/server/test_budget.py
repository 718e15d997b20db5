"""The memory budget's parts that need no server: the limit a memory cgroup gives, and the
measure of a process tree."""

from __future__ import annotations

import os

from jupyter_ext.runs.budget import CGROUP_SHARE, MemoryBudget, derived_limit_mb, tree_pss_mb


def test_the_budget_derives_from_a_cgroup_limit(tmp_path):
    v2, v1 = tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes"
    v2.write_text("max\n")  # v2 without a limit
    v1.write_text(f"{2**63 - 4096}\n")  # v1 without a limit
    assert derived_limit_mb((v2, v1)) == 0.0
    v1.write_text(f"{4 * 2**30}\n")
    assert derived_limit_mb((v2, v1)) == 4096 * CGROUP_SHARE
    v2.write_text(f"{2 * 2**30}\n")
    assert derived_limit_mb((v2, v1)) == 2048 * CGROUP_SHARE
    assert derived_limit_mb((tmp_path / "absent",)) == 0.0


def test_a_budget_compares_the_measure_with_its_limit():
    assert not MemoryBudget(0.0, measure=lambda: 1e9).over()  # no limit
    budget = MemoryBudget(100.0, measure=lambda: 150.0)
    assert budget.over() and budget.last_mb == 150.0
    assert not MemoryBudget(200.0, measure=lambda: 150.0).over()


def test_the_tree_measure_counts_this_process():
    assert tree_pss_mb(os.getpid()) > 1.0
    assert tree_pss_mb(2**22 + 12345) == 0.0  # no such process
