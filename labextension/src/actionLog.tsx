/**
 * The action log panel: every tool call of a session, filterable by tool and outcome. A row
 * whose call changed files has Undo: that change alone is reverted, three-way (a person's
 * later typing stands, and an overlap is reported rather than overwritten).
 */

import { ReactWidget } from '@jupyterlab/apputils';
import { refreshIcon } from '@jupyterlab/ui-components';
import React, { useEffect, useState, useSyncExternalStore } from 'react';

import type { ChatStore } from './store';
import type { IAction } from './tokens';
import { formatDuration } from './format';
import { conflictPlace, type IUndoResult } from './rewind';

type Outcome = 'all' | 'success' | 'failure';

/** The action log of the session open in the chat. */
export class ActionLogPanel extends ReactWidget {
  constructor(private readonly store: ChatStore) {
    super();
    this.id = 'think-action-log';
    this.addClass('jp-ThinkActionLog');
    this.title.label = 'Think action log';
    this.title.closable = true;
  }

  protected render(): JSX.Element {
    return <ActionLog store={this.store} />;
  }
}

function ActionLog({ store }: { store: ChatStore }): JSX.Element {
  const state = useSyncExternalStore(store.subscribe, store.getSnapshot);
  const sessionId = state.session?.id ?? null;
  const [actions, setActions] = useState<IAction[]>([]);
  const [tool, setTool] = useState('');
  const [outcome, setOutcome] = useState<Outcome>('all');
  const [error, setError] = useState<string | null>(null);
  const [tools, setTools] = useState<string[]>([]);
  const [tick, setTick] = useState(0);
  const [undoing, setUndoing] = useState<string | null>(null);
  const [undone, setUndone] = useState<{ ok: boolean; text: string } | null>(
    null
  );

  const undo = async (a: IAction): Promise<void> => {
    if (!sessionId) {
      return;
    }
    setUndoing(String(a.id));
    try {
      const r = await store.api.undoAction(sessionId, String(a.id));
      setUndone({ ok: r.conflicts.length === 0, text: undoSummary(a, r) });
    } catch (e) {
      setUndone({ ok: false, text: `Could not undo ${a.tool}: ${String(e)}` });
    } finally {
      setUndoing(null);
      setTick(t => t + 1);
    }
  };

  useEffect(() => {
    if (!sessionId) {
      setActions([]);
      return;
    }
    let live = true;
    store.api
      .listActions(sessionId, {
        tool: tool || undefined,
        success: outcome === 'all' ? undefined : outcome === 'success'
      })
      .then(list => {
        if (!live) {
          return;
        }
        setActions(list);
        setError(null);
        if (!tool) {
          setTools([...new Set(list.map(a => a.tool))].sort());
        }
      })
      .catch(e => live && setError(String(e)));
    return () => {
      live = false;
    };
  }, [sessionId, tool, outcome, tick]);

  // New tool results refresh the log (debounced: a burst of results is one request).
  useEffect(() => {
    let timer = 0;
    const onFrame = (_: unknown, frame: { type: string }): void => {
      if (frame.type === 'tool_result') {
        window.clearTimeout(timer);
        timer = window.setTimeout(() => setTick(t => t + 1), 300);
      }
    };
    store.frameReceived.connect(onFrame);
    return () => {
      store.frameReceived.disconnect(onFrame);
      window.clearTimeout(timer);
    };
  }, [store]);

  return (
    <div className="jp-ThinkActionLog-body">
      <div className="jp-ThinkActionLog-bar">
        <span className="jp-ThinkActionLog-session">
          {state.session ? state.session.title : 'No session open'}
        </span>
        <label>
          Tool{' '}
          <select
            aria-label="Filter by tool"
            value={tool}
            onChange={e => setTool(e.target.value)}
          >
            <option value="">All tools</option>
            {tools.map(t => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label>
          Outcome{' '}
          <select
            aria-label="Filter by outcome"
            value={outcome}
            onChange={e => setOutcome(e.target.value as Outcome)}
          >
            <option value="all">All</option>
            <option value="success">Succeeded</option>
            <option value="failure">Failed</option>
          </select>
        </label>
        <button
          className="jp-ThinkIconButton"
          aria-label="Refresh the action log"
          title="Refresh"
          onClick={() => setTick(tick + 1)}
        >
          <refreshIcon.react tag="span" />
        </button>
      </div>
      {error ? (
        <div className="jp-ThinkBanner jp-mod-error" role="alert">
          {error}
        </div>
      ) : null}
      {undone ? (
        <div
          className={`jp-ThinkBanner jp-ThinkActionLog-undone ${undone.ok ? 'jp-mod-info' : 'jp-mod-warning'}`}
          role="status"
        >
          {undone.text}
        </div>
      ) : null}
      <table className="jp-ThinkActionLog-table">
        <thead>
          <tr>
            <th>Time</th>
            <th>Tool</th>
            <th>Action</th>
            <th>Input</th>
            <th>Output</th>
            <th>Duration</th>
            <th>Outcome</th>
            <th>Undo</th>
          </tr>
        </thead>
        <tbody>
          {actions.map(a => (
            <tr
              key={a.id}
              className={a.success ? 'jp-mod-success' : 'jp-mod-failure'}
            >
              <td>{formatTime(a.ts)}</td>
              <td>{a.tool}</td>
              <td>{a.action}</td>
              <td className="jp-ThinkActionLog-summary">{a.input_summary}</td>
              <td className="jp-ThinkActionLog-summary">
                {a.success ? a.output_summary : (a.error ?? a.output_summary)}
              </td>
              <td>{formatDuration(a.duration_ms)}</td>
              <td>{a.success ? 'ok' : 'failed'}</td>
              <td>
                {a.undone_by ? (
                  <span className="jp-ThinkActionLog-undoneMark">undone</span>
                ) : a.files?.length ? (
                  <button
                    className="jp-ThinkActionLog-undo"
                    title={`Revert this change of ${a.files.join(', ')} alone (later changes stay)`}
                    aria-label={`Undo ${a.tool} of ${a.files.join(', ')}`}
                    disabled={undoing !== null}
                    onClick={() => void undo(a)}
                  >
                    Undo
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {actions.length === 0 && !error ? (
        <div className="jp-ThinkMessages-empty">No actions recorded.</div>
      ) : null}
    </div>
  );
}

function formatTime(ts: string | number): string {
  const d =
    typeof ts === 'number'
      ? new Date(ts < 1e12 ? ts * 1000 : ts)
      : new Date(ts);
  return Number.isNaN(d.getTime()) ? String(ts) : d.toLocaleTimeString();
}

/** The banner's sentence for a finished undo. */
export function undoSummary(a: IAction, r: IUndoResult): string {
  const said: string[] = [];
  if (r.restored.length) {
    said.push(`restored ${r.restored.join(', ')}`);
  }
  if (r.deleted.length) {
    said.push(`removed ${r.deleted.join(', ')}`);
  }
  if (r.conflicts.length) {
    const kept = r.conflicts.map(conflictPlace).join('; ');
    said.push(`kept as changed since by someone else (conflict): ${kept}`);
  }
  return `Undid ${a.tool}: ${said.join('; ') || 'nothing needed changing'}.`;
}
