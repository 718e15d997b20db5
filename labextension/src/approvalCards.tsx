/**
 * The approval cards above the composer: the call, a diff for file and cell edits, and
 * Approve / Reject / Edit / Always. The first decision (here, in a notebook or over the
 * API) wins; every card settles when the server says so. A decided card leaves the area
 * above the composer: the transcript shows it as one line on its tool call's card, which
 * expands to the whole card.
 */

import { caretDownIcon, caretRightIcon } from '@jupyterlab/ui-components';
import React, {
  createContext,
  useContext,
  useState,
  useSyncExternalStore
} from 'react';

import type { ThinkApi } from './api';
import {
  decidedFor,
  pendingApprovals,
  type ApprovalsModel,
  type IApproval,
  type IDecision
} from './approvals';
import type { ISession } from './tokens';

const MODES: [string, string][] = [
  ['', 'as configured'],
  ['auto', 'auto: never ask'],
  ['default', 'default: deletions, reverts, your kernel'],
  ['strict', 'strict: every write and execution']
];

/** The session's approval mode (the kernel's configured policy when unset). */
function PolicyPicker(props: {
  session: ISession;
  api: ThinkApi;
}): JSX.Element {
  const options = (props.session.options ?? {}) as Record<string, unknown>;
  const approval = (options.approval ?? null) as Record<string, unknown> | null;
  const [mode, setMode] = useState(String(approval?.mode ?? ''));
  const [error, setError] = useState<string | null>(null);
  const always = Array.isArray(approval?.always) ? approval.always : [];
  const change = async (next: string): Promise<void> => {
    const previous = mode;
    setMode(next);
    setError(null);
    const rest = { ...(approval ?? {}) };
    delete rest.mode;
    const body = next ? { ...rest, mode: next } : rest;
    try {
      await props.api.setApprovalPolicy(
        props.session.id,
        Object.keys(body).length ? body : null
      );
    } catch (e) {
      setMode(previous);
      setError(String(e));
    }
  };
  return (
    <div className="jp-ThinkApprovals-policy">
      <label>
        Approvals{' '}
        <select
          aria-label="Approval mode"
          value={mode}
          onChange={e => void change(e.target.value)}
        >
          {MODES.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      {always.length ? (
        <span className="jp-ThinkApproval-why">
          {' '}
          always allowed: {always.join(', ')}
        </span>
      ) : null}
      {error ? (
        <div className="jp-ThinkBanner jp-mod-error" role="alert">
          {error}
        </div>
      ) : null}
    </div>
  );
}

/** Every approval of the open session (pending first). */
export function ApprovalCards(props: {
  model: ApprovalsModel;
}): JSX.Element | null {
  const list = useSyncExternalStore(
    props.model.subscribe,
    props.model.getSnapshot
  );
  const state = useSyncExternalStore(
    props.model.store.subscribe,
    props.model.store.getSnapshot
  );
  if (!state.session) {
    return null;
  }
  return (
    <div className="jp-ThinkApprovals" aria-label="Approvals">
      <PolicyPicker
        key={state.session.id}
        session={state.session}
        api={props.model.store.api}
      />
      {pendingApprovals(list).map(a => (
        <ApprovalCard
          key={a.id}
          approval={a}
          decide={body => props.model.decide(a.id, body)}
        />
      ))}
    </div>
  );
}

/** The approvals of the open session, for the tool cards of the transcript. */
export const ApprovalsContext = createContext<ApprovalsModel | null>(null);

const NO_APPROVALS: readonly IApproval[] = [];
const noop = (): (() => void) => () => undefined;

/** The decided approval of tool call `callId` (re-renders when the approvals change). */
export function useDecidedApproval(callId: string): IApproval | null {
  const model = useContext(ApprovalsContext);
  const snapshot = model?.getSnapshot ?? (() => NO_APPROVALS);
  const list = useSyncExternalStore(
    model?.subscribe ?? noop,
    snapshot,
    snapshot
  );
  return decidedFor(list, callId);
}

/** A decided approval as one line of the transcript; expands to the whole card. */
export function DecidedApproval(props: { approval: IApproval }): JSX.Element {
  const a = props.approval;
  const [open, setOpen] = useState(false);
  return (
    <div
      className={`jp-ThinkApprovalLine jp-mod-${a.status}`}
      data-approval-id={a.id}
      data-status={a.status}
    >
      <button
        className="jp-ThinkApprovalLine-header"
        aria-expanded={open}
        title={describeDecision(a)}
        onClick={() => setOpen(!open)}
      >
        {open ? (
          <caretDownIcon.react tag="span" />
        ) : (
          <caretRightIcon.react tag="span" />
        )}
        <span className="jp-ThinkApprovalLine-text">{describeDecision(a)}</span>
      </button>
      {open ? (
        <ApprovalCard approval={a} decide={() => Promise.resolve()} />
      ) : null}
    </div>
  );
}

function ApprovalCard(props: {
  approval: IApproval;
  decide: (body: IDecision) => Promise<void>;
}): JSX.Element {
  const a = props.approval;
  const [reason, setReason] = useState('');
  const [editing, setEditing] = useState(false);
  const [edited, setEdited] = useState(() => JSON.stringify(a.input, null, 1));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const pending = a.status === 'pending';

  const send = async (body: IDecision): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      await props.decide(body);
    } catch (e) {
      setError(String(e));
    } finally {
      setBusy(false);
    }
  };
  const approve = (always = false): void => {
    const body: IDecision = { decision: 'approve', always };
    if (editing) {
      try {
        const input = JSON.parse(edited);
        if (!input || typeof input !== 'object' || Array.isArray(input)) {
          throw new Error('the input must be a JSON object');
        }
        body.input = input;
      } catch (e) {
        setError(`Edited input: ${String(e)}`);
        return;
      }
    }
    void send(body);
  };

  return (
    <div
      className={`jp-ThinkApproval jp-mod-${a.status}`}
      data-approval-id={a.id}
      data-status={a.status}
      role="group"
      aria-label={`Approval for ${a.tool}`}
    >
      <div className="jp-ThinkApproval-title">
        {pending
          ? 'Approve'
          : a.status === 'approved'
            ? 'Approved'
            : 'Rejected'}{' '}
        <code>{a.tool}</code>
        {a.summary ? <span>: {a.summary}</span> : null}
      </div>
      {a.reason && pending ? (
        <div className="jp-ThinkApproval-why">{a.reason}</div>
      ) : null}
      {a.diff ? <Diff text={a.diff} /> : <Input value={a.input} />}
      {pending && editing ? (
        <textarea
          className="jp-ThinkApproval-editor"
          aria-label="Edited input"
          value={edited}
          onChange={e => setEdited(e.target.value)}
        />
      ) : null}
      {pending ? (
        <div className="jp-ThinkApproval-actions">
          <input
            className="jp-ThinkApproval-reason"
            placeholder="Reason (the model sees it if you reject)"
            aria-label="Reason"
            value={reason}
            onChange={e => setReason(e.target.value)}
          />
          <button
            className="jp-mod-styled jp-mod-accept"
            disabled={busy}
            onClick={() => approve()}
          >
            {editing ? 'Approve edited' : 'Approve'}
          </button>
          <button
            className="jp-mod-styled jp-mod-warn"
            disabled={busy}
            onClick={() => void send({ decision: 'reject', reason })}
          >
            Reject
          </button>
          <button
            className="jp-mod-styled"
            disabled={busy}
            aria-pressed={editing}
            onClick={() => setEditing(!editing)}
          >
            Edit
          </button>
          <button
            className="jp-mod-styled"
            disabled={busy}
            title={`Allow ${a.tool} for the rest of this session`}
            onClick={() => approve(true)}
          >
            Always
          </button>
        </div>
      ) : (
        <div className="jp-ThinkApproval-decided">{describeDecision(a)}</div>
      )}
      {error ? (
        <div className="jp-ThinkBanner jp-mod-error" role="alert">
          {error}
        </div>
      ) : null}
    </div>
  );
}

/** "Approved by ada via notebook: reason". */
export function describeDecision(a: IApproval): string {
  const d = a.decided;
  if (!d) {
    return a.status;
  }
  const verb = d.decision === 'approve' ? 'Approved' : 'Rejected';
  const who = [d.user ? `by ${d.user}` : '', d.source ? `via ${d.source}` : '']
    .filter(Boolean)
    .join(' ');
  return `${verb}${who ? ` ${who}` : ''}${d.reason ? `: ${d.reason}` : ''}`;
}

function Diff(props: { text: string }): JSX.Element {
  return (
    <pre className="jp-ThinkApproval-diff" aria-label="Diff">
      {props.text.split('\n').map((line, i) => {
        const kind =
          line.startsWith('+++') || line.startsWith('---')
            ? 'file'
            : line.startsWith('+')
              ? 'add'
              : line.startsWith('-')
                ? 'del'
                : line.startsWith('@@')
                  ? 'hunk'
                  : 'ctx';
        return (
          <div key={i} className={`jp-ThinkDiff-${kind}`}>
            {line || ' '}
          </div>
        );
      })}
    </pre>
  );
}

function Input(props: { value: unknown }): JSX.Element {
  const v = props.value;
  let text = JSON.stringify(v, null, 1);
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    for (const key of ['code', 'command', 'content', 'source']) {
      if (typeof o[key] === 'string') {
        text = o[key] as string;
        break;
      }
    }
  }
  return <pre className="jp-ThinkApproval-input">{text}</pre>;
}
