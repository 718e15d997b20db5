/**
 * Pending approvals of the open session: loaded from the server when a session
 * opens (so a reload shows them again), added by `approval_requested` frames, settled by
 * `approval_resolved` frames whichever surface decided (sidebar, notebook, API).
 */

import type { ChatStore } from './store';
import type { IIdentity } from './tokens';

/** One approval as the sidebar shows it. */
export interface IApproval {
  id: string;
  tool: string;
  input: unknown;
  summary: string;
  diff: string;
  reason: string;
  status: 'pending' | 'approved' | 'rejected';
  /** The tool call it gates (a decided approval is shown on that call's card). */
  callId: string;
  /** Who decided (a display name, or "you"), from where, and why (once decided). */
  decided?: {
    decision: string;
    user: string;
    source: string;
    reason: string;
    /** The decider's Jupyter user id, when the decision says it. */
    userId?: string;
  };
}

const EDITED = 'with edited arguments';

/** Approved with edited arguments: those are what ran (and what the cards show). */
function editedInput(decision: string, input: unknown): unknown {
  return decision === 'approve' && input && typeof input === 'object'
    ? input
    : undefined;
}

/** The list with this tab's own decisions attributed to "you". */
export function markOwn(
  list: readonly IApproval[],
  me: IIdentity | null
): readonly IApproval[] {
  if (!me) {
    return list;
  }
  const name = me.display_name || me.name || me.username;
  let changed = false;
  const next = list.map(a => {
    const d = a.decided;
    const mine =
      d &&
      d.user !== 'you' &&
      (d.userId ? d.userId === me.username : !!d.user && d.user === name);
    if (!d || !mine) {
      return a;
    }
    changed = true;
    return { ...a, decided: { ...d, user: 'you' } };
  });
  return changed ? next : list;
}

/** The body of a decision (POST .../approvals/{id}). */
export interface IDecision {
  decision: 'approve' | 'reject';
  input?: Record<string, unknown>;
  reason?: string;
  always?: boolean;
}

type Frame = { type: string; [k: string]: unknown };

/** Pure: apply one frame to the list of approvals. */
export function applyApprovalFrame(
  list: readonly IApproval[],
  frame: Frame
): readonly IApproval[] {
  if (frame.type === 'approval_requested') {
    const id = String(frame.id);
    if (list.some(a => a.id === id)) {
      return list; // asked again by a resumed run: already shown
    }
    return [
      ...list,
      {
        id,
        tool: String(frame.tool ?? ''),
        input: frame.input,
        summary: String(frame.summary ?? ''),
        diff: String(frame.diff ?? ''),
        reason: String(frame.reason ?? ''),
        status: 'pending',
        callId: String(frame.call_id ?? '')
      }
    ];
  }
  if (frame.type === 'approval_resolved') {
    const id = String(frame.id);
    const found = list.find(a => a.id === id);
    if (!found || found.status !== 'pending') {
      return list;
    }
    const decision = String(frame.decision ?? '');
    const edited = editedInput(decision, frame.input);
    const settled: IApproval = {
      ...found,
      input: edited ?? found.input,
      // The diff and summary were of the asked call; the edited one ran (the card shows it).
      diff: edited ? '' : found.diff,
      summary: edited ? EDITED : found.summary,
      status: decision === 'approve' ? 'approved' : 'rejected',
      decided: {
        decision,
        user: String(frame.user ?? ''),
        source: String(frame.source ?? ''),
        reason: String(frame.reason ?? ''),
        userId: frame.user_id ? String(frame.user_id) : undefined
      }
    };
    // Kept: the transcript shows it, folded to one line, on its tool call's card.
    return list.map(a => (a.id === id ? settled : a));
  }
  return list;
}

/** The approvals pinned above the composer: only those still waiting for a decision. */
export function pendingApprovals(list: readonly IApproval[]): IApproval[] {
  return list.filter(a => a.status === 'pending');
}

/** The decided approval of tool call `callId`, if there is one. */
export function decidedFor(
  list: readonly IApproval[],
  callId: string
): IApproval | null {
  return list.find(a => a.callId === callId && a.status !== 'pending') ?? null;
}

/** A stored approval row (GET .../approvals) as shown. */
export function approvalFromRow(row: Record<string, unknown>): IApproval {
  const status =
    row.status === 'approved' || row.status === 'rejected'
      ? row.status
      : 'pending';
  let decision = row.decision as Record<string, unknown> | string | null;
  if (typeof decision === 'string') {
    try {
      decision = JSON.parse(decision) as Record<string, unknown>;
    } catch {
      decision = null;
    }
  }
  const edited =
    status === 'approved' && decision
      ? editedInput('approve', decision.input)
      : undefined;
  return {
    id: String(row.id),
    tool: String(row.tool ?? ''),
    input: edited ?? row.input,
    summary: edited ? EDITED : String(row.summary ?? ''),
    diff: edited ? '' : String(row.diff ?? ''),
    reason: '',
    status,
    callId: String(row.call_id ?? ''),
    ...(status !== 'pending' && decision
      ? {
          decided: {
            decision: String(decision.decision ?? ''),
            user: String(decision.user ?? ''),
            source: String(decision.source ?? ''),
            reason: String(decision.reason ?? ''),
            userId: decision.user_id ? String(decision.user_id) : undefined
          }
        }
      : {})
  };
}

/** Follows the chat store's session and frames; decides through the REST API. */
export class ApprovalsModel {
  constructor(readonly store: ChatStore) {
    store.frameReceived.connect((_, frame) => {
      this.set(applyApprovalFrame(this._list, frame as Frame));
    });
    store.subscribe(() => this.follow());
    this.follow();
    void Promise.resolve()
      .then(() => store.api.me())
      .then(me => {
        this._me = me;
        this.set(this._list);
      })
      .catch(e => console.warn('think: identity not loaded', e));
  }

  /** A different session is open: show its pending approvals. */
  private follow(): void {
    const id = this.store.sessionId;
    if (id !== this._session) {
      this._session = id;
      this.set([]);
      void this.load(id);
    }
  }

  /** Subscribe to changes (for `useSyncExternalStore`). */
  subscribe = (listener: () => void): (() => void) => {
    this._listeners.add(listener);
    return () => this._listeners.delete(listener);
  };

  /** Snapshot getter for `useSyncExternalStore`. */
  getSnapshot = (): readonly IApproval[] => this._list;

  /** Send a decision; the card settles when `approval_resolved` arrives. */
  async decide(id: string, body: IDecision): Promise<void> {
    const session = this._session;
    if (!session) {
      return;
    }
    const row = await this.store.api.decideApproval(session, id, {
      ...body,
      source: 'sidebar'
    });
    // Another surface may have been first (409 is thrown); else settle from the answer.
    this.set(
      applyApprovalFrame(this._list, {
        type: 'approval_resolved',
        id,
        ...((row.decision as Record<string, unknown>) ?? {})
      })
    );
  }

  private async load(id: string | null): Promise<void> {
    if (!id) {
      return;
    }
    try {
      // Decided ones too: the transcript shows each on its call's card.
      const rows = await this.store.api.listApprovals(id);
      if (this._session !== id) {
        return;
      }
      let list = this._list;
      for (const row of rows) {
        const a = approvalFromRow(row);
        if (!list.some(x => x.id === a.id)) {
          list = [...list, a];
        }
      }
      this.set(list);
    } catch (e) {
      console.warn('think: approvals not loaded', e);
    }
  }

  private set(list: readonly IApproval[]): void {
    const next = markOwn(list, this._me);
    if (next === this._list) {
      return;
    }
    this._list = next;
    for (const l of this._listeners) {
      l();
    }
  }

  private _list: readonly IApproval[] = [];
  private _me: IIdentity | null = null;
  private _session: string | null = null;
  private _listeners = new Set<() => void>();
}
