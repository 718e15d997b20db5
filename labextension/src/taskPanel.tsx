/**
 * The "Tasks" area of the chat sidebar: the task tree with status, type, progress, what a
 * blocked task waits for and each subagent's state. A task with a subagent opens its
 * drill-in; the area shows only once the model decomposed a request. It is open while a
 * request runs and folds to its header when the request ends, unless pinned open.
 */

import {
  caretDownIcon,
  caretRightIcon,
  checkIcon,
  circleEmptyIcon,
  closeIcon,
  errorIcon,
  LabIcon,
  lockIcon,
  runIcon,
  stopIcon
} from '@jupyterlab/ui-components';
import React, { useMemo, useRef, useState, useSyncExternalStore } from 'react';

import {
  childrenOf,
  FINISHED,
  overall,
  shownRoots,
  waitingFor
} from './taskGraph';
import type { TasksModel } from './tasksModel';
import type { ITask, SubagentStatus, TaskStatus } from './tokens';

const STATUS: Record<TaskStatus, [LabIcon, string]> = {
  pending: [circleEmptyIcon, 'Pending'],
  in_progress: [runIcon, 'In progress'],
  blocked: [lockIcon, 'Blocked'],
  complete: [checkIcon, 'Complete'],
  failed: [closeIcon, 'Failed'],
  cancelled: [stopIcon, 'Cancelled']
};

const SUBAGENT: Record<SubagentStatus, [LabIcon | null, string]> = {
  running: [null, 'running'],
  complete: [checkIcon, 'done'],
  error: [errorIcon, 'error'],
  timeout: [errorIcon, 'timed out'],
  interrupted: [stopIcon, 'interrupted'],
  cancelled: [stopIcon, 'cancelled']
};

/** A thin progress bar with its percentage for assistive technology. */
export function ProgressBar(props: {
  value: number;
  label: string;
}): JSX.Element {
  const pct = Math.round(Math.min(1, Math.max(0, props.value || 0)) * 100);
  return (
    <span
      className="jp-ThinkProgress"
      role="progressbar"
      aria-label={props.label}
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={pct}
      title={`${pct}%`}
    >
      <span className="jp-ThinkProgress-fill" style={{ width: `${pct}%` }} />
    </span>
  );
}

/** A task's status icon. */
export function TaskStatusIcon(props: { status: TaskStatus }): JSX.Element {
  const [icon, label] = STATUS[props.status] ?? [circleEmptyIcon, props.status];
  return (
    <span
      className={`jp-ThinkTaskIcon jp-mod-${props.status}`}
      role="img"
      aria-label={label}
      title={label}
    >
      <icon.react tag="span" />
    </span>
  );
}

/** A subagent's state: a spinner while it runs, then done or what went wrong. */
export function SubagentBadge(props: {
  status: SubagentStatus;
  model?: string;
}): JSX.Element {
  const [icon, label] = SUBAGENT[props.status] ?? [errorIcon, props.status];
  return (
    <span
      className={`jp-ThinkSubagentBadge jp-mod-${props.status}`}
      data-status={props.status}
      aria-label={`Subagent ${label}`}
      title={`Subagent ${label}${props.model ? ` (${props.model})` : ''}`}
    >
      {icon ? (
        <icon.react tag="span" />
      ) : (
        <span className="jp-ThinkSpinner" aria-hidden="true" />
      )}
      <span>{label}</span>
    </span>
  );
}

/** The subagent state a row shows: the stream's end when it came before the task's
 * update, else the task's. */
export function subagentStatus(
  task: ITask | undefined,
  streamStatus: SubagentStatus | undefined
): SubagentStatus | null {
  const fromTask = task?.subagent?.status ?? null;
  if (streamStatus && (streamStatus !== 'running' || !fromTask)) {
    return streamStatus;
  }
  return fromTask;
}

interface IRowProps {
  task: ITask;
  depth: number;
  agent: SubagentStatus | null;
  waits: string;
  expanded: boolean;
  hasChildren: boolean;
  selected: boolean;
  onToggle: (id: string) => void;
  onOpen: (id: string) => void;
}

const TaskRow = React.memo(
  function TaskRow(p: IRowProps): JSX.Element {
    const t = p.task;
    const title = t.title || t.id;
    const note =
      t.status === 'failed' || t.status === 'cancelled' ? t.error : null;
    const tip = [t.description, t.result ? `Result: ${t.result}` : '']
      .filter(Boolean)
      .join('\n\n');
    // Two groups that share a line when the sidebar is wide; in a narrow one the
    // type, badge and bar wrap under the title, which keeps the room it needs.
    const content = (
      <>
        <span className="jp-ThinkTask-line">
          <TaskStatusIcon status={t.status} />
          <span className="jp-ThinkTask-title" title={tip || title}>
            {title}
          </span>
        </span>
        <span className="jp-ThinkTask-meta">
          <span className="jp-ThinkTask-type">{t.type}</span>
          {p.agent ? (
            <SubagentBadge status={p.agent} model={t.subagent?.model} />
          ) : null}
          <ProgressBar value={t.progress} label={`Progress of ${title}`} />
          {p.agent ? (
            <caretRightIcon.react tag="span" className="jp-ThinkTask-open" />
          ) : null}
        </span>
      </>
    );
    return (
      <div
        className={`jp-ThinkTask-row${p.selected ? ' jp-mod-selected' : ''}`}
        style={{ paddingLeft: `${4 + p.depth * 14}px` }}
      >
        {p.hasChildren ? (
          <button
            className="jp-ThinkTask-toggle"
            aria-expanded={p.expanded}
            aria-label={`${p.expanded ? 'Collapse' : 'Expand'} ${title}`}
            onClick={() => p.onToggle(t.id)}
          >
            {p.expanded ? (
              <caretDownIcon.react tag="span" />
            ) : (
              <caretRightIcon.react tag="span" />
            )}
          </button>
        ) : (
          <span className="jp-ThinkTask-toggle" />
        )}
        {p.agent ? (
          <button
            className="jp-ThinkTask-main"
            aria-label={`Open the subagent of ${title}`}
            aria-current={p.selected ? 'true' : undefined}
            onClick={() => p.onOpen(t.id)}
          >
            {content}
          </button>
        ) : (
          <div className="jp-ThinkTask-main">{content}</div>
        )}
        {p.waits && t.status === 'blocked' ? (
          <div className="jp-ThinkTask-hint" role="note">
            waits for {p.waits}
          </div>
        ) : null}
        {note ? (
          <div className="jp-ThinkTask-hint jp-mod-error" title={note}>
            {note}
          </div>
        ) : null}
      </div>
    );
  },
  (a, b) =>
    a.task === b.task &&
    a.agent === b.agent &&
    a.waits === b.waits &&
    a.expanded === b.expanded &&
    a.hasChildren === b.hasChildren &&
    a.selected === b.selected &&
    a.depth === b.depth
);

const PINNED_KEY = 'think:tasks-pinned';

/** Whether the tree shows: pinned open, else as toggled during this phase, else while a
 * request runs. */
export function tasksOpen(
  pinned: boolean,
  toggled: boolean | null,
  running: boolean
): boolean {
  return pinned || (toggled ?? running);
}

function readPinned(): boolean {
  try {
    return window.localStorage.getItem(PINNED_KEY) === '1';
  } catch {
    return false;
  }
}

/** Status of each stream, as one string: equal strings, no re-render of the tree. */
function streamStatuses(model: TasksModel): string {
  return Object.values(model.getSnapshot().streams)
    .map(s => `${s.taskId}=${s.status}`)
    .join(' ');
}

/** The tasks area; nothing while the session has no decomposed request. */
export function TaskPanel(props: {
  model: TasksModel;
  /** A request of the session runs: the tree is open, and folds when it ends. */
  running: boolean;
}): JSX.Element | null {
  const { model, running } = props;
  const graph = useSyncExternalStore(
    model.subscribe,
    () => model.getSnapshot().graph
  );
  const statusKey = useSyncExternalStore(model.subscribe, () =>
    streamStatuses(model)
  );
  const drill = useSyncExternalStore(model.subscribe, model.getDrill);
  const [pinned, setPinned] = useState(readPinned);
  // The user's toggle holds until a request starts or ends.
  const [toggledOpen, setToggledOpen] = useState<boolean | null>(null);
  const wasRunning = useRef(running);
  if (wasRunning.current !== running) {
    wasRunning.current = running;
    if (toggledOpen !== null) {
      setToggledOpen(null);
    }
  }
  const open = tasksOpen(pinned, toggledOpen, running);
  const pin = (): void => {
    const next = !pinned;
    setPinned(next);
    try {
      window.localStorage.setItem(PINNED_KEY, next ? '1' : '0');
    } catch {
      // storage refused (private mode): pinned for this page only
    }
  };
  const [toggled, setToggled] = useState<Record<string, boolean>>({});
  const roots = useMemo(() => shownRoots(graph), [graph]);
  const streams = useMemo(() => {
    const out: Record<string, SubagentStatus> = {};
    for (const pair of statusKey ? statusKey.split(' ') : []) {
      const [id, st] = pair.split('=');
      out[id] = st as SubagentStatus;
    }
    return out;
  }, [statusKey]);
  if (!roots.length) {
    return null;
  }
  const sum = overall(graph);
  const last = roots[roots.length - 1];
  // In-flight requests and the newest one are open; older finished ones folded away.
  const isExpanded = (id: string): boolean =>
    toggled[id] ??
    (id !== last &&
    !graph.tasks[id].parent_id &&
    FINISHED.has(graph.tasks[id].status)
      ? false
      : true);
  const toggle = (id: string): void =>
    setToggled(prev => ({ ...prev, [id]: !isExpanded(id) }));
  const openTask = (id: string): void => model.open(id);

  const renderTask = (id: string, depth: number): JSX.Element => {
    const task = graph.tasks[id];
    const kids = childrenOf(graph, id);
    const expanded = kids.length > 0 && isExpanded(id);
    return (
      <li
        key={id}
        className={`jp-ThinkTask jp-mod-${task.status}`}
        data-task-id={id}
        data-status={task.status}
        aria-label={`Task ${task.title || id}`}
      >
        <TaskRow
          task={task}
          depth={depth}
          agent={subagentStatus(task, streams[id])}
          waits={waitingFor(graph, id).join(', ')}
          expanded={expanded}
          hasChildren={kids.length > 0}
          selected={drill === id}
          onToggle={toggle}
          onOpen={openTask}
        />
        {expanded ? (
          <ul className="jp-ThinkTasks-list">
            {kids.map(k => renderTask(k, depth + 1))}
          </ul>
        ) : null}
      </li>
    );
  };

  const pct = Math.round(sum.progress * 100);
  return (
    <section className="jp-ThinkTasks" aria-label="Tasks">
      <div className="jp-ThinkTasks-header">
        <button
          className="jp-ThinkTasks-toggle"
          aria-expanded={open}
          aria-label={open ? 'Hide the tasks' : 'Show the tasks'}
          onClick={() => {
            if (open && pinned) {
              pin();
            }
            setToggledOpen(!open);
          }}
        >
          {open ? (
            <caretDownIcon.react tag="span" />
          ) : (
            <caretRightIcon.react tag="span" />
          )}
          <span className="jp-ThinkTasks-title">Tasks</span>
        </button>
        <span
          className="jp-ThinkTasks-count"
          title={`${sum.done} of ${sum.total} tasks complete${
            sum.active ? ' in the request in flight' : ''
          }`}
        >
          {sum.done}/{sum.total}
        </span>
        <ProgressBar value={sum.progress} label="Overall progress" />
        <span className="jp-ThinkTasks-pct">{pct}%</span>
        <button
          className={`jp-ThinkLabelButton jp-ThinkTasks-pin${pinned ? ' jp-mod-active' : ''}`}
          aria-pressed={pinned}
          aria-label="Keep the tasks open"
          title={
            pinned
              ? 'Pinned open: click to let the tasks fold when a request ends'
              : 'Keep the tasks open after the request ends'
          }
          onClick={pin}
        >
          {pinned ? 'Pinned' : 'Pin'}
        </button>
      </div>
      {open ? (
        <ul className="jp-ThinkTasks-list jp-ThinkTasks-tree">
          {roots.map(id => renderTask(id, 0))}
        </ul>
      ) : null}
    </section>
  );
}
