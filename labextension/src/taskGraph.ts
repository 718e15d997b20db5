/**
 * The task graph of a session as the sidebar shows it: pure and immutable.
 *
 * `GET .../tasks` loads it, `task_created` / `task_updated` frames (the whole task each
 * time) keep it live. The two race after every (re)connect, so a task is replaced only by
 * a copy at least as new (`updated_at`): a stale snapshot never undoes a live change.
 * Unchanged tasks keep their identity, so memoised rows do not re-render.
 */

import type { ITask, ITaskNode, ITaskTree, TaskStatus } from './tokens';

/** Every task of a session, by id, and the order they were first seen in. */
export interface ITaskGraph {
  tasks: Readonly<Record<string, ITask>>;
  /** Ids in creation order (ties: the order they arrived). */
  order: readonly string[];
}

/** The empty graph. */
export const EMPTY_GRAPH: ITaskGraph = { tasks: {}, order: [] };

/** Statuses after which a task no longer changes on its own. */
export const FINISHED: ReadonlySet<TaskStatus> = new Set([
  'complete',
  'failed',
  'cancelled'
]);

function stamp(v: ITask['updated_at']): number {
  if (typeof v === 'number') {
    return v;
  }
  if (typeof v === 'string' && v) {
    const n = Number(v);
    return Number.isFinite(n) ? n : Date.parse(v) / 1000;
  }
  return Number.NEGATIVE_INFINITY;
}

/** A task of the wire, checked: malformed fields become safe defaults (never a crash). */
export function cleanTask(raw: ITask): ITask | null {
  if (!raw || typeof raw !== 'object' || !raw.id) {
    return null;
  }
  const t = { ...raw } as ITask & { children?: unknown };
  delete t.children;
  t.id = String(raw.id);
  t.parent_id = raw.parent_id ? String(raw.parent_id) : null;
  t.title = String(raw.title ?? '');
  t.dependencies = Array.isArray(raw.dependencies)
    ? raw.dependencies.map(String)
    : [];
  const p = Number(raw.progress);
  t.progress = Number.isFinite(p) ? Math.min(1, Math.max(0, p)) : 0;
  t.subagent =
    raw.subagent && typeof raw.subagent === 'object' ? raw.subagent : null;
  return t;
}

/** Put one task in: the newer copy wins; the same graph when nothing changes. */
export function upsertTask(graph: ITaskGraph, raw: ITask): ITaskGraph {
  const task = cleanTask(raw);
  if (!task) {
    return graph;
  }
  const old = graph.tasks[task.id];
  if (old) {
    if (stamp(task.updated_at) < stamp(old.updated_at)) {
      return graph; // out of order: an older copy than the one shown
    }
    if (sameTask(old, task)) {
      return graph;
    }
    return { ...graph, tasks: { ...graph.tasks, [task.id]: task } };
  }
  return {
    tasks: { ...graph.tasks, [task.id]: task },
    order: insertByCreation(graph, task)
  };
}

function insertByCreation(graph: ITaskGraph, task: ITask): string[] {
  const at = stamp(task.created_at);
  const order = [...graph.order];
  let i = order.length;
  // Usually it is the newest and goes last; a late frame of an older task goes in place.
  while (i > 0 && stamp(graph.tasks[order[i - 1]].created_at) > at) {
    i--;
  }
  order.splice(i, 0, task.id);
  return order;
}

function sameTask(a: ITask, b: ITask): boolean {
  return (
    a.updated_at === b.updated_at &&
    a.status === b.status &&
    a.progress === b.progress &&
    a.title === b.title &&
    a.result === b.result &&
    a.error === b.error &&
    a.parent_id === b.parent_id &&
    a.dependencies.join() === b.dependencies.join() &&
    JSON.stringify(a.subagent) === JSON.stringify(b.subagent)
  );
}

/** Merge a `GET .../tasks` answer (nested) into the graph. */
export function mergeTree(graph: ITaskGraph, tree: ITaskTree): ITaskGraph {
  let next = graph;
  const walk = (nodes: ITaskNode[] | undefined): void => {
    for (const node of Array.isArray(nodes) ? nodes : []) {
      next = upsertTask(next, node);
      walk(node.children);
    }
  };
  walk(tree?.tasks);
  return next;
}

const ROOT = '';
const indexes = new WeakMap<ITaskGraph, Map<string, string[]>>();

/** Parent id (ROOT for roots) -> child ids, built once per graph. */
function childIndex(graph: ITaskGraph): Map<string, string[]> {
  let index = indexes.get(graph);
  if (!index) {
    index = new Map();
    for (const id of graph.order) {
      const parent = graph.tasks[id].parent_id;
      // A task whose parent is unknown (not loaded, or gone) shows as a root.
      const key = parent && graph.tasks[parent] ? parent : ROOT;
      const list = index.get(key);
      if (list) {
        list.push(id);
      } else {
        index.set(key, [id]);
      }
    }
    indexes.set(graph, index);
  }
  return index;
}

/** Ids of the children of `id` (null: the roots), in creation order. */
export function childrenOf(graph: ITaskGraph, id: string | null): string[] {
  return childIndex(graph).get(id ?? ROOT) ?? [];
}

/** True when a task is worth showing: it has subtasks or a subagent. A request the
 * model did not decompose (a lone root) is the chat itself, not a task list. */
export function isShown(graph: ITaskGraph, id: string): boolean {
  const t = graph.tasks[id];
  if (!t) {
    return false;
  }
  return (
    t.parent_id !== null || !!t.subagent || childrenOf(graph, id).length > 0
  );
}

/** The roots the sidebar lists. */
export function shownRoots(graph: ITaskGraph): string[] {
  return childrenOf(graph, null).filter(id => isShown(graph, id));
}

/** Every task of the subtree under `id` (itself excluded). */
export function descendants(graph: ITaskGraph, id: string): string[] {
  const out: string[] = [];
  const stack = [...childrenOf(graph, id)];
  while (stack.length) {
    const c = stack.pop()!;
    out.push(c);
    stack.push(...childrenOf(graph, c));
  }
  return out;
}

/** The header's numbers: progress (0..1) and counts over the requests in flight, or over
 * all shown requests when none is in flight. */
export function overall(graph: ITaskGraph): {
  progress: number;
  done: number;
  total: number;
  active: number;
} {
  const roots = shownRoots(graph);
  const live = roots.filter(id => !FINISHED.has(graph.tasks[id].status));
  const scope = live.length ? live : roots;
  if (!scope.length) {
    return { progress: 0, done: 0, total: 0, active: 0 };
  }
  let done = 0;
  let total = 0;
  for (const r of scope) {
    const sub = descendants(graph, r);
    for (const id of sub.length ? sub : [r]) {
      total++;
      if (graph.tasks[id].status === 'complete') {
        done++;
      }
    }
  }
  const progress =
    scope.reduce((sum, id) => sum + graph.tasks[id].progress, 0) / scope.length;
  return { progress, done, total, active: live.length };
}

/** Titles of the dependencies a task still waits for. */
export function waitingFor(graph: ITaskGraph, id: string): string[] {
  const t = graph.tasks[id];
  if (!t) {
    return [];
  }
  return t.dependencies
    .map(d => graph.tasks[d])
    .filter((d): d is ITask => !!d && d.status !== 'complete')
    .map(d => d.title || d.id);
}
