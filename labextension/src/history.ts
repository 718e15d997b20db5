/**
 * Stored messages into chat state: history, the in-flight partial, other tabs' messages.
 *
 * Tool messages are folded into the cards of the calls they answer; unchanged messages keep
 * their identity so memoised views do not re-render after a reconnect.
 */

import {
  IChatMessage,
  IChatState,
  ICompactionState,
  IStoredImage,
  IToolCallState,
  putMessage,
  putTool,
  removeMessage
} from './chatState';
import { compactionFromWire, usageFromWire } from './longSession';
import type { IWireMessage, IWireToolCall } from './tokens';

/** Convert a stored message; tool messages are folded into their cards elsewhere. */
export function fromWire(w: IWireMessage): IChatMessage {
  return {
    id: String(w.id),
    role: w.role === 'user' || w.role === 'system' ? w.role : 'assistant',
    content: w.content ?? '',
    reasoning: w.reasoning ?? '',
    status: w.status ?? 'complete',
    toolCallIds: (w.tool_calls ?? []).map(tc => String(tc.id)),
    createdAt: w.created_at,
    error: w.error ?? undefined,
    usage: usageFromWire(w),
    attachments: w.attachments ?? undefined
  };
}

function parseArgs(raw: unknown): unknown {
  if (typeof raw !== 'string') {
    return raw;
  }
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function wireToolCall(tc: IWireToolCall, messageId: string): IToolCallState {
  const name = tc.name ?? tc.function?.name ?? 'tool';
  const input = tc.input ?? parseArgs(tc.arguments ?? tc.function?.arguments);
  return {
    id: String(tc.id),
    name,
    input,
    status: 'running',
    messageId,
    progress: ''
  };
}

/** A card completed by a stored tool message. */
function toolFromWire(tc: IToolCallState, w: IWireMessage): IToolCallState {
  const failed = w.status === 'error' || w.ok === false || !!w.error;
  return {
    ...tc,
    name: w.name ?? tc.name,
    status: failed ? 'error' : 'complete',
    output: w.content || w.error || '',
    summary: w.summary ?? w.result_summary ?? '',
    durationMs: w.duration_ms ?? tc.durationMs,
    resultId: String(w.id),
    fullSize: w.output_size ?? undefined,
    storedImages: storedImages(w)
  };
}

/** The images a stored tool message keeps (undefined when none). */
function storedImages(w: IWireMessage): IStoredImage[] | undefined {
  const sessionId = typeof w.session_id === 'string' ? w.session_id : '';
  const out: IStoredImage[] = [];
  (w.attachments ?? []).forEach((a, index) => {
    if (a && a.kind === 'image' && a.blob && sessionId) {
      out.push({ sessionId, messageId: String(w.id), index, name: a.name });
    }
  });
  return out.length ? out : undefined;
}

/** Turn stored messages into ordered chat messages plus tool cards. */
export function foldWire(wire: IWireMessage[]): {
  order: string[];
  messages: Record<string, IChatMessage>;
  toolCalls: Record<string, IToolCallState>;
  compactions: Record<string, ICompactionState>;
} {
  const order: string[] = [];
  const messages: Record<string, IChatMessage> = {};
  const toolCalls: Record<string, IToolCallState> = {};
  const compactions: Record<string, ICompactionState> = {};
  for (const w of wire) {
    const compaction = compactionFromWire(w);
    if (compaction) {
      compactions[compaction.id] = compaction;
      continue;
    }
    if (w.role === ('summary' as string)) {
      continue;
    }
    if (w.role === 'tool') {
      const callId = String(w.tool_call_id ?? '');
      const tc = toolCalls[callId];
      if (!tc) {
        continue; // a result whose call is on an older page
      }
      toolCalls[callId] = toolFromWire(tc, w);
      continue;
    }
    const m = fromWire(w);
    if (!messages[m.id]) {
      order.push(m.id);
    }
    messages[m.id] = m;
    for (const tc of w.tool_calls ?? []) {
      const prev = toolCalls[String(tc.id)];
      toolCalls[String(tc.id)] = prev ?? wireToolCall(tc, m.id);
    }
  }
  // A stored call without a stored result only stays "running" while its message streams.
  for (const tc of Object.values(toolCalls)) {
    const st = messages[tc.messageId]?.status;
    if (tc.status === 'running' && st !== 'streaming' && st !== 'pending') {
      toolCalls[tc.id] = { ...tc, status: 'cancelled' };
    }
  }
  return { order, messages, toolCalls, compactions };
}

/** Replace the messages by a `history` frame, keeping unsent local messages. */
export function replaceHistory(
  state: IChatState,
  wire: IWireMessage[],
  nextCursor: string | number | null
): IChatState {
  const folded = foldWire(wire);
  // Keep optimistic user messages the server has not stored yet.
  const pending = state.order.filter(
    id => state.messages[id].local && !folded.messages[id]
  );
  const order = [...folded.order, ...pending];
  const messages = { ...folded.messages };
  for (const id of pending) {
    messages[id] = state.messages[id];
  }
  // Reuse unchanged objects so memoised views do not re-render after a reconnect.
  for (const id of folded.order) {
    const old = state.messages[id];
    if (old && sameMessage(old, messages[id])) {
      messages[id] = old;
    }
  }
  const toolCalls = { ...folded.toolCalls };
  for (const [id, tc] of Object.entries(toolCalls)) {
    const old = state.toolCalls[id];
    if (old && old.status === tc.status && old.output === tc.output) {
      toolCalls[id] = old;
    }
  }
  const streaming = folded.order.find(
    id => messages[id].status === 'streaming'
  );
  return {
    ...state,
    order,
    messages,
    toolCalls,
    compactions: { ...state.compactions, ...folded.compactions },
    streamingId: streaming ?? null,
    nextCursor
  };
}

function sameMessage(a: IChatMessage, b: IChatMessage): boolean {
  return (
    a.usage?.tokensIn === b.usage?.tokensIn &&
    a.content === b.content &&
    a.reasoning === b.reasoning &&
    a.status === b.status &&
    a.role === b.role &&
    a.toolCallIds.join() === b.toolCallIds.join()
  );
}

/** Upsert a whole stored message (the in-flight `partial`, or another tab's message). */
export function upsertWire(
  state: IChatState,
  w: IWireMessage,
  partial: boolean
): IChatState {
  const compaction = compactionFromWire(w);
  if (compaction) {
    return {
      ...state,
      compactions: { ...state.compactions, [compaction.id]: compaction }
    };
  }
  if (w.role === 'tool') {
    const tc = state.toolCalls[String(w.tool_call_id ?? '')];
    if (!tc) {
      return state;
    }
    return putTool(state, toolFromWire(tc, w));
  }
  const m = fromWire(w);
  if (partial && m.status !== 'complete' && m.status !== 'error') {
    m.status = 'streaming';
  }
  let next = state;
  // Another tab's user message replaces our optimistic copy of the same text.
  if (m.role === 'user' && !state.messages[m.id]) {
    const local = state.order.find(
      id => state.messages[id].local && state.messages[id].content === m.content
    );
    if (local) {
      next = removeMessage(next, local);
    }
  }
  for (const tc of w.tool_calls ?? []) {
    if (!next.toolCalls[String(tc.id)]) {
      next = putTool(next, wireToolCall(tc, m.id));
    }
  }
  const old = next.messages[m.id];
  if (old) {
    m.toolCallIds = [...new Set([...old.toolCallIds, ...m.toolCallIds])];
    if (!partial && sameMessage(old, m)) {
      return next;
    }
    if (old.status === 'queued' && m.status === 'complete') {
      // Its run started: it now comes after the replies it waited for.
      next = removeMessage(next, m.id);
    }
  }
  next = putMessage(next, m);
  if (partial) {
    next = { ...next, streamingId: m.id };
  }
  return next;
}
