/**
 * Long sessions in the chat state: usage per message and per session, compaction
 * markers, and the pure helpers the views use. No JupyterLab imports (unit tested).
 */

import type {
  IChatMessage,
  IChatState,
  ICompactionState,
  IMessageUsage,
  ISessionUsage
} from './chatState';
import type { IUsageReport, IWireMessage } from './tokens';
import type { ICompactionFrame, IUsageFrame } from './wire';

/** A `usage` frame: the message that made the call shows it, the session totals grow. */
export function applyUsage(state: IChatState, f: IUsageFrame): IChatState {
  const u = state.usage;
  const cost =
    f.cost === null || f.cost === undefined ? u.cost : (u.cost ?? 0) + f.cost;
  const usage: ISessionUsage = {
    calls: u.calls + 1,
    tokensIn: u.tokensIn + (f.tokens_in || 0),
    tokensOut: u.tokensOut + (f.tokens_out || 0),
    cost,
    costComplete: u.costComplete && f.cost !== null && f.cost !== undefined,
    estimated: u.estimated + (f.estimated ? 1 : 0)
  };
  let next: IChatState = { ...state, usage };
  const m = state.messages[f.message_id];
  // Step calls belong to their assistant message; summaries of tool outputs and
  // compactions count in the totals only.
  if (m && m.role === 'assistant' && (f.purpose ?? 'step') === 'step') {
    next = {
      ...next,
      messages: {
        ...next.messages,
        [m.id]: { ...m, usage: usageOfFrame(f) }
      }
    };
  }
  return next;
}

function usageOfFrame(f: IUsageFrame): IMessageUsage {
  return {
    role: f.role,
    model: f.model,
    tokensIn: f.tokens_in || 0,
    tokensOut: f.tokens_out || 0,
    tokensCached: f.tokens_cached || 0,
    cost: f.cost ?? null,
    estimated: !!f.estimated
  };
}

/** The usage of a stored assistant message, if it recorded one. */
export function usageFromWire(w: IWireMessage): IMessageUsage | undefined {
  if (w.role !== 'assistant' || !w.model || typeof w.tokens_in !== 'number') {
    return undefined;
  }
  return {
    role: w.model_role ?? 'primary',
    model: w.model,
    tokensIn: w.tokens_in,
    tokensOut: w.tokens_out ?? 0,
    tokensCached: w.tokens_cached ?? 0,
    cost: w.cost ?? null,
    estimated: false
  };
}

/** A `compaction` frame. */
export function applyCompaction(
  state: IChatState,
  f: ICompactionFrame
): IChatState {
  const c: ICompactionState = {
    id: f.message_id,
    summary: f.summary,
    count: f.count,
    firstId: f.first_id,
    tailId: f.tail_id,
    toSeq: f.to_seq,
    tokensBefore: f.tokens_before,
    tokensAfter: f.tokens_after,
    model: f.model
  };
  return { ...state, compactions: { ...state.compactions, [c.id]: c } };
}

/** A stored `summary` message as a compaction (null if it is not one). */
export function compactionFromWire(w: IWireMessage): ICompactionState | null {
  const info = w.compaction;
  if (w.role !== ('summary' as string) || !info) {
    return null;
  }
  return {
    id: String(w.id),
    summary: w.content ?? '',
    count: info.count,
    firstId: info.first_id,
    tailId: info.tail_id,
    toSeq: info.to_seq,
    tokensBefore: info.tokens_before,
    tokensAfter: info.tokens_after,
    model: w.model ?? undefined
  };
}

/** Session totals from `GET .../usage`. */
export function sessionUsageFromReport(r: IUsageReport): ISessionUsage {
  const t = r.total;
  return {
    calls: t.calls,
    tokensIn: t.tokens_in,
    tokensOut: t.tokens_out,
    cost: t.cost,
    costComplete: t.cost_complete,
    estimated: t.estimated
  };
}

/** One row of the message list: a message, or the marker of compacted messages. */
export type DisplayItem =
  | { kind: 'message'; id: string }
  | { kind: 'compaction'; compaction: ICompactionState; hidden: string[] };

/**
 * The rows to show: messages in order, with the messages the latest compaction covers
 * folded behind one marker (placed where they were). Older compactions are inside it.
 */
export function displayItems(
  order: readonly string[],
  messages: Record<string, IChatMessage>,
  compactions: Record<string, ICompactionState>,
  atStart: boolean
): DisplayItem[] {
  const latest = Object.values(compactions).reduce<ICompactionState | null>(
    (best, c) => (best === null || c.toSeq > best.toSeq ? c : best),
    null
  );
  const plain = (): DisplayItem[] =>
    order.map(id => ({ kind: 'message' as const, id }));
  if (!latest) {
    return plain();
  }
  let end = latest.tailId ? order.indexOf(latest.tailId) : -1;
  if (end < 0) {
    // The tail is not loaded yet (or there was none): the marker goes last.
    end = order.length;
  }
  let start = latest.firstId ? order.indexOf(latest.firstId) : -1;
  if (start < 0 || start > end) {
    start = 0;
    // The session's first request is never compacted: keep it when it is loaded.
    const first = order[0];
    if (atStart && first && messages[first]?.role === 'user') {
      start = 1;
    }
  }
  const hidden = order.slice(start, end);
  return [
    ...order.slice(0, start).map(id => ({ kind: 'message' as const, id })),
    { kind: 'compaction', compaction: latest, hidden },
    ...order.slice(end).map(id => ({ kind: 'message' as const, id }))
  ];
}

/** `1234` -> `1.2k`, `1234567` -> `1.2M`. */
export function formatTokens(n: number): string {
  if (n < 1000) {
    return String(n);
  }
  if (n < 1_000_000) {
    return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  }
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** USD with enough digits for small amounts; `—` when unknown. */
export function formatCost(cost: number | null, complete = true): string {
  if (cost === null || cost === undefined) {
    return '—';
  }
  const digits = cost < 0.01 ? 4 : cost < 1 ? 3 : 2;
  const text = `$${cost.toFixed(digits)}`;
  return complete ? text : `≥ ${text}`;
}

/** The one-line footer of an assistant message: role · model · tokens · cost. */
export function usageLine(u: IMessageUsage): string {
  const approx = u.estimated ? '~' : '';
  const parts = [
    u.role,
    u.model,
    `${approx}${formatTokens(u.tokensIn)} in`,
    `${approx}${formatTokens(u.tokensOut)} out`
  ];
  if (u.tokensCached) {
    parts.push(`${formatTokens(u.tokensCached)} cached`);
  }
  if (u.cost !== null) {
    parts.push(formatCost(u.cost));
  }
  return parts.join(' · ');
}

/** The session badge: total tokens and cost. */
export function sessionLine(u: ISessionUsage): string {
  const tokens = formatTokens(u.tokensIn + u.tokensOut);
  const approx = u.estimated ? '~' : '';
  const cost =
    u.cost === null ? '' : ` · ${formatCost(u.cost, u.costComplete)}`;
  return `${approx}${tokens} tokens${cost}`;
}
