/**
 * What each subagent said and did, for its drill-in view: pure and immutable.
 *
 * Live `subagent_*` frames build a small chat per task: text goes into the step in flight,
 * a tool call joins it, and text after a tool call starts the next step (a model call
 * streams its text before its tool calls). After a reload the stored messages of the
 * subagent's facet (`?facet=subagent:<task id>`) give the same shape. None of it ever goes
 * into the main message list: that is what keeps the chat readable while four subagents
 * stream at once.
 */

import type { IChatMessage, IToolCallState } from './chatState';
import { foldWire } from './history';
import type { IWireMessage, SubagentStatus } from './tokens';
import type { SubagentFrame } from './wire';

/** Text a stream keeps; older steps are dropped past it (the store has them all). */
export const MAX_STREAM_CHARS = 200000;

/** One subagent's stream. */
export interface ISubagentStream {
  taskId: string;
  title: string;
  model: string;
  status: SubagentStatus;
  order: readonly string[];
  messages: Readonly<Record<string, IChatMessage>>;
  toolCalls: Readonly<Record<string, IToolCallState>>;
  /** The step live text and tool calls go to (null: the next text starts one). */
  current: string | null;
  /** Live steps made so far (their ids count up). */
  steps: number;
  result: string | null;
  error: { message: string; code: string } | null;
  /** Followed from its `subagent_spawned` in this tab: nothing is missing. */
  whole: boolean;
  /** Characters of text kept, and steps dropped to stay under MAX_STREAM_CHARS. */
  chars: number;
  dropped: number;
  /** The stored history of its facet. */
  history: 'none' | 'loading' | 'loaded' | 'error';
  historyError?: string;
  /** `steps` when the history request went out: live steps after it may be newer. */
  liveSince: number;
  nextCursor: string | number | null;
}

/** Streams by task id. */
export type Streams = Readonly<Record<string, ISubagentStream>>;

/** An empty stream for a task (`whole` when it starts now, in this tab). */
export function newStream(
  taskId: string,
  init: Partial<ISubagentStream> = {}
): ISubagentStream {
  return {
    taskId,
    title: '',
    model: '',
    status: 'running',
    order: [],
    messages: {},
    toolCalls: {},
    current: null,
    steps: 0,
    result: null,
    error: null,
    whole: false,
    chars: 0,
    dropped: 0,
    history: 'none',
    liveSince: 0,
    nextCursor: null,
    ...init
  };
}

const ERROR_STATUSES: Record<string, SubagentStatus> = {
  timeout: 'timeout',
  interrupted: 'interrupted',
  cancelled: 'cancelled'
};

/** Apply one `subagent_*` frame; the same object when nothing changes. */
export function applySubagentFrame(
  streams: Streams,
  f: SubagentFrame
): Streams {
  const id = f.task_id ? String(f.task_id) : '';
  if (!id) {
    return streams;
  }
  const s = streams[id];
  const put = (next: ISubagentStream): Streams => ({ ...streams, [id]: next });
  switch (f.type) {
    case 'subagent_spawned':
      // Seen before any of its text: this tab follows it whole. A second spawn (a retry
      // after a restart) keeps what was shown.
      return put({
        ...(s ?? newStream(id, { whole: true })),
        title: f.title ?? s?.title ?? '',
        model: f.model ?? s?.model ?? '',
        status: 'running',
        result: null,
        error: null
      });
    case 'subagent_text_delta': {
      if (!f.delta) {
        return streams;
      }
      const [base, step] = openStep(s ?? newStream(id), false);
      return put(
        trim(
          putStep(base, {
            ...step,
            content: step.content + f.delta,
            status: 'streaming'
          }),
          f.delta.length
        )
      );
    }
    case 'subagent_tool_call': {
      const callId = String(f.id);
      const base0 = s ?? newStream(id);
      if (base0.toolCalls[callId]) {
        return streams; // a duplicate
      }
      const [base, step] = openStep(base0, true);
      const tc: IToolCallState = {
        id: callId,
        name: f.name,
        input: f.input,
        status: 'running',
        messageId: step.id,
        progress: ''
      };
      return put({
        ...putStep(base, {
          ...step,
          toolCallIds: [...step.toolCallIds, callId]
        }),
        toolCalls: { ...base.toolCalls, [callId]: tc }
      });
    }
    case 'subagent_tool_result': {
      const base = s ?? newStream(id);
      const callId = String(f.call_id);
      const tc: IToolCallState = base.toolCalls[callId] ?? {
        id: callId,
        name: f.name,
        input: undefined,
        status: 'running',
        messageId: '',
        progress: ''
      };
      return put({
        ...base,
        toolCalls: {
          ...base.toolCalls,
          [callId]: {
            ...tc,
            name: f.name || tc.name,
            status: f.ok ? 'complete' : 'error',
            output: f.output ?? '',
            durationMs: f.duration_ms
          }
        }
      });
    }
    case 'subagent_complete':
      return put(
        finish(s ?? newStream(id), 'complete', {
          result: f.result ?? '',
          error: null
        })
      );
    case 'subagent_error': {
      const code = f.code ?? 'error';
      return put(
        finish(s ?? newStream(id), ERROR_STATUSES[code] ?? 'error', {
          error: { message: f.message ?? '', code }
        })
      );
    }
    default:
      return streams;
  }
}

/** The step in flight, or a new one; `forTool`: a tool call may join a step with text. */
function openStep(
  s: ISubagentStream,
  forTool: boolean
): [ISubagentStream, IChatMessage] {
  const cur = s.current ? s.messages[s.current] : undefined;
  if (cur && (forTool || !cur.toolCallIds.length)) {
    return [s, cur];
  }
  let next = s;
  if (cur) {
    next = putStep(next, { ...cur, status: 'complete' });
  }
  const steps = next.steps + 1;
  const step: IChatMessage = {
    id: `${s.taskId}:live:${steps}`,
    role: 'assistant',
    content: '',
    reasoning: '',
    status: 'streaming',
    toolCallIds: []
  };
  return [{ ...next, steps, current: step.id }, step];
}

function putStep(s: ISubagentStream, m: IChatMessage): ISubagentStream {
  const order = s.messages[m.id] ? s.order : [...s.order, m.id];
  return { ...s, order, messages: { ...s.messages, [m.id]: m } };
}

/** Drop the oldest steps once the text kept passes MAX_STREAM_CHARS. */
function trim(s: ISubagentStream, added: number): ISubagentStream {
  let chars = s.chars + added;
  if (chars <= MAX_STREAM_CHARS) {
    return { ...s, chars };
  }
  const order = [...s.order];
  const messages = { ...s.messages };
  const toolCalls = { ...s.toolCalls };
  let dropped = s.dropped;
  while (chars > MAX_STREAM_CHARS && order.length > 1) {
    const id = order.shift()!;
    chars -= messages[id].content.length;
    for (const tc of messages[id].toolCallIds) {
      delete toolCalls[tc];
    }
    delete messages[id];
    dropped++;
  }
  return { ...s, order, messages, toolCalls, chars, dropped };
}

function finish(
  s: ISubagentStream,
  status: SubagentStatus,
  extra: Partial<ISubagentStream>
): ISubagentStream {
  const messages = { ...s.messages };
  for (const id of s.order) {
    if (messages[id].status === 'streaming') {
      messages[id] = {
        ...messages[id],
        status: status === 'complete' ? 'complete' : 'error'
      };
    }
  }
  const toolCalls = { ...s.toolCalls };
  for (const tc of Object.values(toolCalls)) {
    if (tc.status === 'running') {
      toolCalls[tc.id] = { ...tc, status: 'cancelled' };
    }
  }
  return { ...s, ...extra, status, messages, toolCalls, current: null };
}

/** Mark a stream's history as requested (live steps from now on are kept over it). */
export function historyRequested(s: ISubagentStream): ISubagentStream {
  // Live text from now on starts a new step, so what came before the request (which the
  // store has) and what comes after it (which it may not have yet) never share a step.
  return {
    ...s,
    current: null,
    history: 'loading',
    historyError: undefined,
    liveSince: s.steps
  };
}

/** The stored history of a subagent's facet replaces what was pieced together from
 * frames; live steps that arrived since the request and are not in it stay after it. */
export function withHistory(
  s: ISubagentStream,
  wire: IWireMessage[],
  nextCursor: string | number | null
): ISubagentStream {
  const folded = foldWire(wire);
  const stored = folded.order.map(id => folded.messages[id]);
  const storedText = stored.map(m => m.content).join('\n');
  const order = [...folded.order];
  const messages: Record<string, IChatMessage> = { ...folded.messages };
  const toolCalls: Record<string, IToolCallState> = { ...folded.toolCalls };
  for (const id of s.order) {
    const m = s.messages[id];
    const n = Number(id.split(':live:')[1] ?? 0);
    if (!n || n <= s.liveSince) {
      continue; // older than the request: the store has it
    }
    const calls = m.toolCallIds.filter(tc => !folded.toolCalls[tc]);
    const content = storedText.includes(m.content) ? '' : m.content;
    if (!calls.length && !content) {
      continue;
    }
    order.push(id);
    messages[id] = { ...m, content, toolCallIds: calls };
    for (const tc of calls) {
      toolCalls[tc] = s.toolCalls[tc];
    }
  }
  // A stored result whose call was live keeps the live card's newest state.
  for (const [id, tc] of Object.entries(s.toolCalls)) {
    if (toolCalls[id] && toolCalls[id].status === 'running') {
      toolCalls[id] = {
        ...toolCalls[id],
        ...tc,
        messageId: toolCalls[id].messageId
      };
    }
  }
  const last = order[order.length - 1];
  const running = s.status === 'running';
  const current =
    running && last && messages[last].status === 'streaming' ? last : null;
  if (!running) {
    for (const id of order) {
      if (messages[id].status === 'streaming') {
        messages[id] = { ...messages[id], status: 'complete' };
      }
    }
  }
  const chars = order.reduce((n, id) => n + messages[id].content.length, 0);
  return {
    ...s,
    order,
    messages,
    toolCalls,
    current,
    chars,
    dropped: 0,
    history: 'loaded',
    nextCursor
  };
}

/** An older page of the facet goes before what is shown. */
export function withOlder(
  s: ISubagentStream,
  wire: IWireMessage[],
  nextCursor: string | number | null
): ISubagentStream {
  const folded = foldWire(wire);
  const order = folded.order.filter(id => !s.messages[id]);
  return {
    ...s,
    order: [...order, ...s.order],
    messages: { ...folded.messages, ...s.messages },
    toolCalls: { ...folded.toolCalls, ...s.toolCalls },
    nextCursor
  };
}

/** The history request failed: say so in the view, keep what the frames gave. */
export function historyFailed(
  s: ISubagentStream,
  error: string
): ISubagentStream {
  return { ...s, history: 'error', historyError: error };
}
