/**
 * The stream-to-state reducer: server frames and local actions in, chat state out.
 *
 * Pure and immutable: a frame that changes nothing returns the same state object, and
 * only the messages and tool calls a frame touches get new identities, so React can
 * memoise every finished message and re-render only the one that streams (
 * "streaming that jitters because the whole chat re-renders" must not happen).
 */

import {
  IChatMessage,
  IChatState,
  ITaskState,
  IToolCallState,
  initialState,
  MAX_PROGRESS_CHARS,
  putMessage,
  putTool,
  removeMessage
} from './chatState';
import { foldWire, fromWire, replaceHistory, upsertWire } from './history';
import { applyCompaction, applyUsage } from './longSession';
import type { ISessionUsage } from './chatState';
import type {
  AgentStatus,
  IAttachment,
  ISession,
  IWireMessage,
  MessageStatus
} from './tokens';
import type {
  IErrorFrame,
  IPartialFrame,
  ITaskFrame,
  ServerFrame
} from './wire';

export { initialState, isRunning, MAX_PROGRESS_CHARS } from './chatState';
export type {
  IChatMessage,
  IChatState,
  ITaskState,
  IToolCallState,
  ToolStatus
} from './chatState';

/** Actions that come from this tab rather than from the server. */
export type LocalAction =
  | { type: 'local/connected'; connected: boolean }
  | {
      type: 'local/user_message';
      id: string;
      content: string;
      attachments?: IAttachment[];
    }
  | { type: 'local/user_ack'; localId: string; message: IWireMessage }
  | { type: 'local/send_failed'; localId: string; error: string }
  | { type: 'local/truncate'; messageId: string }
  | { type: 'local/prepend'; messages: IWireMessage[]; nextCursor: unknown }
  | { type: 'local/session'; session: ISession }
  | { type: 'local/usage'; usage: ISessionUsage }
  | { type: 'local/reset'; session?: ISession | null };

export type ChatAction = ServerFrame | LocalAction;

const MAX_CHANGED_FILES = 50;

/** Apply one frame or local action. */
export function reduce(state: IChatState, action: ChatAction): IChatState {
  const seq = (action as { seq?: unknown }).seq;
  if (typeof seq === 'number') {
    if (seq <= state.lastSeq) {
      return state; // a duplicate, e.g. replayed after a reconnect
    }
    const next = apply(state, action);
    return { ...next, lastSeq: seq };
  }
  return apply(state, action);
}
/** Apply many actions (one animation frame's worth). */
export function reduceAll(
  state: IChatState,
  actions: readonly ChatAction[]
): IChatState {
  return actions.reduce(reduce, state);
}

function apply(state: IChatState, a: ChatAction): IChatState {
  switch (a.type) {
    case 'sync': {
      const next = { ...state, connected: true, run: a.run ?? null };
      if (a.session) {
        next.session = a.session;
      }
      if (a.status) {
        next.status = a.status;
        next.statusDetail = a.detail ?? '';
      }
      if (!a.run && next.status === 'idle') {
        next.statusDetail = '';
      }
      return next;
    }
    case 'history':
      return replaceHistory(state, a.messages, a.next_cursor ?? null);
    case 'partial':
      return onPartial(state, a);
    case 'message':
      return upsertWire(state, a.message, false);
    case 'status':
      return onStatus(
        state.awaitingRun ? { ...state, awaitingRun: false } : state,
        a.status,
        a.detail ?? ''
      );
    case 'text_delta': {
      const [s, m] = ensureAssistant(state, a.message_id);
      return putMessage(
        { ...s, streamingId: m.id },
        {
          ...m,
          content: m.content + a.delta,
          status: 'streaming'
        }
      );
    }
    case 'text_done': {
      const [s, m] = ensureAssistant(state, a.message_id);
      if (m.content === a.text && m.status !== 'streaming') {
        return state;
      }
      return putMessage(s, { ...m, content: a.text });
    }
    case 'reasoning': {
      const [s, m] = ensureAssistant(state, a.message_id);
      return putMessage(
        { ...s, streamingId: m.id },
        {
          ...m,
          reasoning: m.reasoning + a.delta,
          status: m.status === 'pending' ? 'streaming' : m.status
        }
      );
    }
    case 'tool_call':
      return onToolCall(state, a.id, a.name, a.input, a.message_id ?? '');
    case 'tool_progress': {
      const tc = state.toolCalls[a.call_id];
      if (!tc || !a.text) {
        return state;
      }
      let progress = tc.progress + a.text;
      if (progress.length > MAX_PROGRESS_CHARS) {
        progress = progress.slice(progress.length - MAX_PROGRESS_CHARS);
      }
      return putTool(state, { ...tc, progress });
    }
    case 'tool_result': {
      let s = state;
      if (!s.toolCalls[a.call_id]) {
        s = onToolCall(s, a.call_id, a.name, undefined, '');
      }
      const tc = s.toolCalls[a.call_id];
      return putTool(s, {
        ...tc,
        name: a.name || tc.name,
        status: a.ok ? 'complete' : 'error',
        output: a.output,
        summary: a.summary ?? '',
        durationMs: a.duration_ms,
        display: a.display ?? [],
        resultId: a.result_id || tc.resultId,
        fullSize: a.full_size || undefined
      });
    }
    case 'usage':
      return applyUsage(state, a);
    case 'compaction':
      return applyCompaction(state, a);
    case 'chat': {
      const [s, m] = ensureAssistant(state, a.message_id);
      const status: MessageStatus =
        a.stop_reason === 'cancelled' ? 'cancelled' : 'complete';
      return putMessage(
        {
          ...s,
          awaitingRun: false,
          streamingId: s.streamingId === m.id ? null : s.streamingId
        },
        { ...m, content: a.content, status }
      );
    }
    case 'error':
      return onError(state, a);
    case 'task_queued':
    case 'task_retrying':
    case 'task_complete':
    case 'task_failed': {
      const status = a.type.slice(5) as ITaskState['status'];
      const next = {
        ...state,
        tasks: {
          ...state.tasks,
          [a.task_id]: {
            id: a.task_id,
            status,
            detail: a.detail ?? '',
            attempt: a.attempt ?? 0
          }
        }
      };
      return onRunTask(next, a, status);
    }
    case 'file_changed':
      return {
        ...state,
        changedFiles: [
          ...state.changedFiles,
          { path: a.path, action: a.action }
        ].slice(-MAX_CHANGED_FILES)
      };
    case 'local/connected':
      return a.connected === state.connected
        ? state
        : { ...state, connected: a.connected };
    case 'local/user_message':
      return putMessage(
        { ...state, error: null, awaitingRun: true },
        {
          id: a.id,
          role: 'user',
          content: a.content,
          reasoning: '',
          status: 'pending',
          toolCallIds: [],
          local: true,
          attachments: a.attachments
        }
      );
    case 'local/user_ack': {
      const real = fromWire(a.message);
      if (state.messages[real.id]) {
        // The server's copy arrived first (history or a `message` frame).
        return removeMessage(state, a.localId);
      }
      if (!state.messages[a.localId]) {
        return putMessage(state, real);
      }
      const order = state.order.map(id => (id === a.localId ? real.id : id));
      const messages = { ...state.messages, [real.id]: real };
      delete messages[a.localId];
      return { ...state, order, messages };
    }
    case 'local/send_failed': {
      const m = state.messages[a.localId];
      if (!m) {
        return state;
      }
      return putMessage(
        { ...state, awaitingRun: false },
        { ...m, status: 'error', error: a.error }
      );
    }
    case 'local/truncate': {
      const idx = state.order.indexOf(a.messageId);
      if (idx < 0) {
        return state;
      }
      const dropped = state.order.slice(idx);
      const messages = { ...state.messages };
      const toolCalls = { ...state.toolCalls };
      for (const id of dropped) {
        for (const tcId of messages[id]?.toolCallIds ?? []) {
          delete toolCalls[tcId];
        }
        delete messages[id];
      }
      return {
        ...state,
        order: state.order.slice(0, idx),
        messages,
        toolCalls,
        streamingId: dropped.includes(state.streamingId ?? '')
          ? null
          : state.streamingId,
        error: null
      };
    }
    case 'local/prepend': {
      const folded = foldWire(a.messages);
      const order = folded.order.filter(id => !state.messages[id]);
      return {
        ...state,
        order: [...order, ...state.order],
        messages: { ...folded.messages, ...state.messages },
        toolCalls: { ...folded.toolCalls, ...state.toolCalls },
        compactions: { ...folded.compactions, ...state.compactions },
        nextCursor: (a.nextCursor as string | number | null) ?? null
      };
    }
    case 'local/session':
      return state.session?.id === a.session.id
        ? { ...state, session: { ...state.session, ...a.session } }
        : state;
    case 'local/usage':
      return { ...state, usage: a.usage };
    case 'local/reset':
      return initialState(a.session ?? null);
    default:
      return state; // unknown frame types are ignored, not fatal
  }
}
/** The run's in-flight snapshot: the streaming message and the tools that still run. */
function onPartial(state: IChatState, a: IPartialFrame): IChatState {
  let next = a.message ? upsertWire(state, a.message, true) : state;
  for (const t of a.tools ?? []) {
    const found = next.toolCalls[t.id];
    if (!found) {
      next = onToolCall(next, t.id, t.name, t.input, t.message_id ?? '');
    }
    const tc = next.toolCalls[t.id];
    if (tc.status === 'complete' || tc.status === 'error') {
      continue; // its stored result came with the history: newer than the snapshot
    }
    // History calls a stored call without a result stopped; the server says it runs.
    next = putTool(next, { ...tc, status: 'running', progress: t.progress });
  }
  // The snapshot includes every event up to its seq: live copies of those are duplicates.
  const seq = a.upto ?? a.message?.seq;
  return typeof seq === 'number' && seq > next.lastSeq
    ? { ...next, lastSeq: seq }
    : next;
}

/**
 * A run is a durable task: its `task_*` events start and end it. The server ends a run
 * (complete, failed, cancelled) with `task_complete` / `task_failed` and may send no
 * `status: idle` after it, so these settle the chat too.
 */
function onRunTask(
  state: IChatState,
  a: ITaskFrame,
  status: ITaskState['status']
): IChatState {
  const run = state.run;
  const isRun =
    a.task_id === a.run_id ||
    (run !== null && (a.task_id === run.id || a.task_id === run.run_id));
  if (!isRun) {
    return state;
  }
  if (status === 'queued') {
    if (a.detail?.startsWith('queued')) {
      return state; // it waits behind the run in flight (its message shows "queued")
    }
    return { ...state, run: { ...(run ?? {}), id: a.task_id } };
  }
  if (status === 'retrying') {
    const detail = a.detail
      ? `retrying (attempt ${a.attempt ?? 0}): ${a.detail}`
      : 'retrying';
    return { ...state, status: 'waiting', statusDetail: detail };
  }
  const cancelled = status === 'failed' && a.detail === 'cancelled';
  let next: IChatState = { ...state, awaitingRun: false };
  if (status === 'failed' && !cancelled) {
    // The detail is the final word (it counts the retries); an `error` frame of this run
    // that came first gives its code (e.g. `auth`, which the setup card fixes).
    next.error = {
      message: a.detail || 'The request failed.',
      code: state.error?.code ?? 'run_failed',
      retryable: true
    };
  }
  next = settle(
    next,
    status === 'complete' ? 'complete' : cancelled ? 'cancelled' : 'error'
  );
  return { ...next, status: 'idle', statusDetail: '' };
}

function onStatus(
  state: IChatState,
  status: AgentStatus,
  detail: string
): IChatState {
  if (status === 'idle') {
    const settled = settle(state, 'complete');
    if (settled === state && state.status === 'idle' && !detail) {
      return state;
    }
    return { ...settled, status, statusDetail: detail };
  }
  if (status === state.status && detail === state.statusDetail) {
    return state;
  }
  const next: IChatState = { ...state, status, statusDetail: detail };
  if (status === 'thinking') {
    next.error = null;
  }
  return next;
}

/** The run ended: nothing may stay "streaming" or "running". */
function settle(state: IChatState, finalStatus: MessageStatus): IChatState {
  const busy =
    state.streamingId !== null ||
    state.run !== null ||
    state.order.some(id => isOpen(state.messages[id])) ||
    Object.values(state.toolCalls).some(tc => tc.status === 'running');
  if (!busy) {
    return state;
  }
  let next: IChatState = { ...state, streamingId: null, run: null };
  for (const id of state.order) {
    const m = state.messages[id];
    if (isOpen(m)) {
      next = putMessage(next, { ...m, status: finalStatus });
    }
  }
  for (const tc of Object.values(state.toolCalls)) {
    if (tc.status === 'running') {
      next = putTool(next, { ...tc, status: 'cancelled' });
    }
  }
  return next;
}

function isOpen(m: IChatMessage): boolean {
  return m.status === 'streaming' || (m.status === 'pending' && !m.local);
}

function onError(state: IChatState, a: IErrorFrame): IChatState {
  let next: IChatState = {
    ...state,
    awaitingRun: false,
    error: {
      message: a.message,
      code: a.code ?? 'error',
      retryable: !!a.retryable
    }
  };
  const id = state.streamingId;
  if (id && state.messages[id]) {
    next = putMessage(next, {
      ...state.messages[id],
      status: 'error',
      error: a.message,
      errorCode: a.code ?? 'error'
    });
  }
  return settle(next, 'error');
}

function onToolCall(
  state: IChatState,
  id: string,
  name: string,
  input: unknown,
  messageId: string
): IChatState {
  const existing = state.toolCalls[id];
  if (existing && existing.status !== 'running') {
    return state; // a late duplicate must not turn a finished card back to running
  }
  const [s, m] = ensureAssistant(state, messageId || state.streamingId || '');
  const tc: IToolCallState = existing
    ? { ...existing, name, input }
    : { id, name, input, status: 'running', messageId: m.id, progress: '' };
  let next = putTool(s, tc);
  if (!m.toolCallIds.includes(id)) {
    next = putMessage(next, { ...m, toolCallIds: [...m.toolCallIds, id] });
  }
  return next;
}

/** Find the assistant message `id`, or create it (empty, streaming) at the end. */
function ensureAssistant(
  state: IChatState,
  id: string
): [IChatState, IChatMessage] {
  let key = id;
  if (!key) {
    // Events without a message id belong to the message in flight, else the last reply.
    const last = state.order[state.order.length - 1];
    key =
      state.streamingId ??
      (last && state.messages[last].role === 'assistant' ? last : 'run-tail');
  }
  const found = state.messages[key];
  if (found) {
    return [state, found];
  }
  const m: IChatMessage = {
    id: key,
    role: 'assistant',
    content: '',
    reasoning: '',
    status: 'streaming',
    toolCallIds: []
  };
  return [putMessage(state, m), m];
}
