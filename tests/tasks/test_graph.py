"""The pure task graph: examples, then invariants over random operation
sequences (hypothesis)."""

from __future__ import annotations

import copy
import dataclasses
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from think_kernel.tasks import graph as G
from think_kernel.tasks.graph import FINAL, Limits, Task, TaskError


def _plan() -> dict[str, Task]:
    g = G.start(G.add({}, Task("r", "request", type="plan")), "r")
    g = G.add(g, Task("a", "read", type="explore", parent_id="r"))
    g = G.add(g, Task("b", "plot", parent_id="r", dependencies=("a",)))
    return G.add(g, Task("c", "check", type="test", parent_id="r", dependencies=("a", "b")))


def test_dependencies_block_and_unblock() -> None:
    g = _plan()
    assert [t.id for t in G.ready(g)] == ["a"]
    assert [t.id for t in G.blocked(g)] == ["b", "c"]
    with pytest.raises(TaskError, match="blocked: it waits for a"):
        G.start(g, "b")
    g = G.complete(G.start(g, "a"), "a", "3 columns")
    assert g["b"].status == "pending" and g["c"].status == "blocked"
    assert G.blockers(g, "c") == ["b"]
    g = G.complete(G.start(g, "b"), "b")
    assert g["c"].status == "pending"
    assert [t.id for t in G.active(g)] == ["r"]


def test_progress_counts_finished_work() -> None:
    g = _plan()
    assert G.progress(g, "r") == 0.0
    g = G.complete(G.start(g, "a"), "a")
    assert G.progress(g, "r") == pytest.approx(1 / 4)
    g = G.fail(g, "b", "no")
    g = G.cancel(g, "c")  # cancelled work leaves the count
    assert G.progress(g, "r") == pytest.approx(2 / 3)
    g = G.complete(g, "r")
    assert G.progress(g, "r") == 1.0 and G.overall(g) == 1.0


def test_tree_ancestors_descendants() -> None:
    g = G.add(_plan(), Task("a1", "sub", parent_id="a"))
    assert [t.id for t in G.ancestors(g, "a1")] == ["a", "r"]
    assert [t.id for t in G.descendants(g, "r")] == ["a", "a1", "b", "c"]
    assert G.depth(g, "a1") == 2
    ((root, kids),) = G.tree(g)
    assert root.id == "r" and [k[0].id for k in kids] == ["a", "b", "c"]
    assert kids[0][1][0][0].id == "a1"


@pytest.mark.parametrize(
    ("task", "message"),
    [
        (Task("a", "again", parent_id="r"), "already a task"),
        (Task("x", "orphan", parent_id="nope"), "no parent task"),
        (Task("x", "dep", parent_id="r", dependencies=("nope",)), "no dependency"),
        (Task("x", "self", parent_id="r", dependencies=("x",)), "itself"),
        (Task("x", "up", parent_id="a", dependencies=("r",)), "contains it"),
        (Task("x", "typo", type="deploy", parent_id="r"), "unknown task type"),
        (Task("x", " ", parent_id="r"), "needs a title"),
    ],
)
def test_invalid_additions_are_refused(task: Task, message: str) -> None:
    g = _plan()
    before = copy.deepcopy(g)
    with pytest.raises(TaskError, match=message):
        G.add(g, task)
    assert g == before


def test_limits_are_configurable() -> None:
    small = Limits(max_depth=1, max_children=2, max_tasks=4)
    g = G.add({}, Task("r", "root"), small)
    g = G.add(g, Task("a", "a", parent_id="r"), small)
    with pytest.raises(TaskError, match="at most 1 levels"):
        G.add(g, Task("a1", "deep", parent_id="a"), small)
    g = G.add(g, Task("b", "b", parent_id="r"), small)
    with pytest.raises(TaskError, match="already has 2 subtasks"):
        G.add(g, Task("c", "c", parent_id="r"), small)
    g = G.add(g, Task("r2", "second root"), small)
    with pytest.raises(TaskError, match="at most 4 tasks"):
        G.add(g, Task("r3", "third root"), small)


def test_a_cycle_is_refused() -> None:
    g = G.add(_plan(), Task("d", "d", parent_id="r"))
    g = G.add_dependency(g, "d", "c")
    with pytest.raises(TaskError, match="cycle"):
        G.add_dependency(g, "a", "d")
    assert not G.has_cycle(g)


def test_complete_needs_finished_subtasks_and_fail_cancels_them() -> None:
    g = _plan()
    with pytest.raises(TaskError, match="unfinished subtasks"):
        G.complete(g, "r")
    g = G.fail(g, "r", "gave up")
    assert {t.status for t in G.descendants(g, "r")} == {"cancelled"}
    with pytest.raises(TaskError, match="already failed"):
        G.cancel(g, "r")


# -- properties ------------------------------------------------------------------------------

LIMITS = Limits(max_depth=3, max_children=4, max_tasks=20)
OPS = ("add", "add", "add", "dep", "start", "complete", "fail", "cancel")

op = st.tuples(
    st.sampled_from(OPS),
    st.integers(0, 5),  # which task (modulo the candidates): few, so limits and cycles are hit
    st.lists(st.integers(0, 5), max_size=3),  # dependencies
    st.sampled_from((False, False, False, True)),  # wild: any task (often refused)
    st.sampled_from(G.TYPES),
)


ELIGIBLE = {
    "add": lambda g, t: t.status not in FINAL,  # a parent that takes subtasks
    "dep": lambda g, t: t.status in ("pending", "blocked"),
    "start": lambda g, t: t.status == "pending",
    "complete": lambda g, t: (
        t.status in ("pending", "in_progress")
        and all(d.status in FINAL for d in G.descendants(g, t.id))
    ),
    "fail": lambda g, t: t.status not in FINAL and t.parent_id is not None,
    "cancel": lambda g, t: t.status not in FINAL and t.parent_id is not None,
}


def _apply(g: dict[str, Task], n: int, step: tuple) -> dict[str, Task]:
    """Apply one drawn operation. Its target and dependencies are picked among the tasks
    they suit (so most operations do something) or, for a ``wild`` one, among all tasks (so
    some are refused)."""
    kind, pick, deps, wild, type_ = step
    ids = list(g)
    suited = ids if wild else [k for k in ids if ELIGIBLE[kind](g, g[k])] or ids
    target = suited[pick % len(suited)] if suited else "missing"

    def dependencies(of: str | None) -> list[str]:
        above = {of, *(a.id for a in G.ancestors(g, of))} if of in g else set()
        pool = ids if wild else [k for k in ids if k not in above]
        if not pool:
            return ["missing"] * len(deps) if wild else []
        chosen = [pool[d % len(pool)] for d in deps]
        return chosen if wild else list(dict.fromkeys(chosen))

    if kind == "add":
        parent = None if not ids or pick % 7 == 0 else target
        task = Task(f"t{n}", f"task {n}", type_, parent_id=parent)
        return G.add(g, dataclasses.replace(task, dependencies=tuple(dependencies(parent))), LIMITS)
    if kind == "dep":
        return G.add_dependency(g, target, (dependencies(target) or [target])[0])
    if kind == "start":
        return G.start(g, target)
    if kind == "complete":
        return G.complete(g, target, "done")
    if kind == "fail":
        return G.fail(g, target, "broke")
    return G.cancel(g, target, "no longer needed")


def _check(g: dict[str, Task]) -> None:
    assert not G.has_cycle(g)
    assert len(g) <= LIMITS.max_tasks
    for t in g.values():
        assert t.status in G.STATUSES and t.type in G.TYPES
        assert t.parent_id is None or t.parent_id in g
        assert all(d in g for d in t.dependencies)
        assert t.id not in t.dependencies
        assert G.depth(g, t.id) <= LIMITS.max_depth
        assert len(G.children(g, t.id)) <= LIMITS.max_children
        unfinished = bool(G.blockers(g, t.id))
        if t.status in ("pending", "blocked"):
            assert (t.status == "blocked") == unfinished, t
        if t.status == "in_progress":
            assert not unfinished, t  # started only when ready
        if t.status == "complete":
            assert all(d.status in FINAL for d in G.descendants(g, t.id))
        if t.status in FINAL and t.status != "complete":
            assert all(d.status in FINAL for d in G.descendants(g, t.id))
    for value in G.progress_all(g).values():
        assert 0.0 <= value <= 1.0
    assert 0.0 <= G.overall(g) <= 1.0


def _request() -> dict[str, Task]:
    """What every request starts with: its root task, in progress."""
    return G.start(G.add({}, Task("r", "the request", "plan"), LIMITS), "r")


@settings(max_examples=300, deadline=None)
@given(st.lists(op, min_size=10, max_size=80))
def test_invariants_hold_over_random_operations(steps: list[tuple]) -> None:
    g = _request()
    for n, step in enumerate(steps):
        before = copy.deepcopy(g)
        try:
            new = _apply(g, n, step)
        except TaskError:
            assert g == before  # a refused operation changes nothing
            continue
        assert g == before  # pure: the input is never mutated
        for task_id, task in before.items():
            if task.status in FINAL:
                assert new[task_id] == task  # final states never change
        if step[0] == "complete":
            old, now = G.progress_all(before), G.progress_all(new)
            for task_id in before:
                assert now[task_id] >= old[task_id] - 1e-12  # monotone under completion
        assert set(before) <= set(new)  # nothing is ever removed
        _check(new)
        g = new


def test_random_operations_reach_every_state() -> None:
    # The property tests above are only as good as the graphs they build: the same
    # operations, drawn from a seeded generator, must succeed often and reach every status.
    rnd = random.Random(12)
    seen: set[str] = set()
    applied = 0
    for _ in range(50):
        g = _request()
        for n in range(60):
            step = (
                rnd.choice(OPS),
                rnd.randrange(41),
                [rnd.randrange(41) for _ in range(rnd.randrange(3))],
                rnd.random() < 0.2,
                rnd.choice(G.TYPES),
            )
            try:
                g = _apply(g, n, step)
                applied += 1
            except TaskError:
                continue
        seen |= {t.status for t in g.values()}
        assert not G.has_cycle(g)
    assert seen == set(G.STATUSES)
    assert applied > 50 * 60 // 5, applied


@settings(max_examples=100, deadline=None)
@given(st.lists(op, min_size=10, max_size=80))
def test_changed_names_exactly_what_differs(steps: list[tuple]) -> None:
    g = _request()
    for n, step in enumerate(steps):
        try:
            new = _apply(g, n, step)
        except TaskError:
            continue
        diff = set(G.changed(g, new))
        assert diff == {k for k in new if g.get(k) != new[k]}
        g = new
