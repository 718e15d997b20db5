/**
 * Pure helpers of the tool cards: the status a card names, the arguments as readable rows,
 * and our own tools' structured results (the subagent reports) as records.
 */

import type { IToolCallState } from './chatState';

/** How a card's status looks: its word and its colour class. */
export interface IToolStatusView {
  label: string;
  /** `rejected` is neutral: a person decided, nothing broke. */
  kind: 'running' | 'complete' | 'error' | 'cancelled' | 'rejected';
}

const LABEL: Record<IToolCallState['status'], string> = {
  running: 'running',
  complete: 'done',
  error: 'failed',
  cancelled: 'stopped'
};

/** The status of a call as its card shows it (a rejected call is not a failure). */
export function toolStatusView(call: IToolCallState): IToolStatusView {
  if (call.status === 'error' && call.summary === 'rejected') {
    return { label: 'rejected', kind: 'rejected' };
  }
  return { label: LABEL[call.status], kind: call.status };
}

/** One argument of a call: its name and its value as text. */
export interface IArgumentRow {
  name: string;
  value: string;
  /** Shown as a block (code, several lines) rather than inline. */
  block: boolean;
}

/** A call's arguments as rows (name: value), or null when they are not an object. */
export function argumentRows(input: unknown): IArgumentRow[] | null {
  if (!input || typeof input !== 'object' || Array.isArray(input)) {
    return null;
  }
  return Object.entries(input as Record<string, unknown>).map(([name, v]) => {
    const value =
      typeof v === 'string'
        ? v
        : Array.isArray(v) && v.every(x => typeof x !== 'object' || x === null)
          ? v.map(String).join(', ')
          : typeof v === 'object' && v !== null
            ? JSON.stringify(v, null, 1)
            : String(v);
    return { name, value, block: value.includes('\n') || value.length > 80 };
  });
}

/** One subagent as check_subagent_status and wait_for_subagents report it. */
export interface ISubagentRecord {
  taskId: string;
  title: string;
  status: string;
  /** "fake-model · 2.1 s · 3 steps" */
  detail: string;
  result: string;
  error: string;
}

const REPORTING_TOOLS = new Set([
  'check_subagent_status',
  'wait_for_subagents'
]);

/** The subagent records of a report (one JSON object a line), or null if it is not one. */
export function subagentRecords(
  tool: string,
  output: string | undefined
): ISubagentRecord[] | null {
  if (!REPORTING_TOOLS.has(tool) || !output?.trim().startsWith('{')) {
    return null;
  }
  const out: ISubagentRecord[] = [];
  for (const line of output.split('\n')) {
    if (!line.trim()) {
      continue;
    }
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(line);
    } catch {
      return null; // not our report: show the text as it is
    }
    if (!o || typeof o !== 'object' || !('task_id' in o)) {
      return null;
    }
    const text = (k: string): string =>
      o[k] === undefined || o[k] === null ? '' : String(o[k]);
    const detail = [
      text('model'),
      o.seconds !== undefined ? `${text('seconds')} s` : '',
      o.steps !== undefined
        ? `${text('steps')} step${o.steps === 1 ? '' : 's'}`
        : '',
      o.task_status !== undefined ? `task ${text('task_status')}` : ''
    ]
      .filter(Boolean)
      .join(' · ');
    out.push({
      taskId: text('task_id'),
      title: text('title'),
      status: text('status'),
      detail,
      result: text('result') || text('writing'),
      error: text('error')
    });
  }
  return out.length ? out : null;
}
