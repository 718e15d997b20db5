/**
 * The chat state of one session and the small immutable updates every reducer step uses.
 */

import type { AgentStatus, IRunInfo, ISession, MessageStatus } from './tokens';

export type ToolStatus = 'running' | 'complete' | 'error' | 'cancelled';

/** A tool call card's state. */
export interface IToolCallState {
  id: string;
  name: string;
  input: unknown;
  status: ToolStatus;
  messageId: string;
  output?: string;
  summary?: string;
  durationMs?: number;
  progress: string;
  display?: Record<string, unknown>[];
}

/** A message as the chat shows it. */
export interface IChatMessage {
  id: string;
  role: 'user' | 'assistant' | 'system';
  content: string;
  reasoning: string;
  status: MessageStatus;
  toolCallIds: string[];
  createdAt?: string;
  /** True until the server acknowledges an optimistic user message. */
  local?: boolean;
  error?: string;
}

export interface ITaskState {
  id: string;
  status: 'queued' | 'retrying' | 'complete' | 'failed';
  detail: string;
  attempt: number;
}

/** Everything the chat panel renders for one session. */
export interface IChatState {
  session: ISession | null;
  connected: boolean;
  status: AgentStatus;
  statusDetail: string;
  run: IRunInfo | null;
  order: string[];
  messages: Record<string, IChatMessage>;
  toolCalls: Record<string, IToolCallState>;
  /** Id of the assistant message that is streaming, if any. */
  streamingId: string | null;
  /** Highest event `seq` applied; frames at or below it are duplicates. */
  lastSeq: number;
  error: { message: string; code: string; retryable: boolean } | null;
  tasks: Record<string, ITaskState>;
  changedFiles: { path: string; action: string }[];
  /** Cursor for older history (REST `before=`), null when there is none. */
  nextCursor: string | number | null;
  /** A message was sent and its run has not reported a status yet. */
  awaitingRun: boolean;
}

/** Cap on the live output a tool card keeps (the full output is in the blob store). */
export const MAX_PROGRESS_CHARS = 20000;
/** The empty state for a session. */
export function initialState(session: ISession | null = null): IChatState {
  return {
    session,
    connected: false,
    status: 'idle',
    statusDetail: '',
    run: null,
    order: [],
    messages: {},
    toolCalls: {},
    streamingId: null,
    lastSeq: 0,
    error: null,
    tasks: {},
    changedFiles: [],
    nextCursor: null,
    awaitingRun: false
  };
}

/** True while a run is in flight (or was just requested): the UI shows Stop. */
export function isRunning(state: IChatState): boolean {
  return (
    state.status !== 'idle' || state.streamingId !== null || state.awaitingRun
  );
}

/** Add a message at the end, or replace it where it is. */
export function putMessage(state: IChatState, m: IChatMessage): IChatState {
  const order = state.messages[m.id] ? state.order : [...state.order, m.id];
  return { ...state, order, messages: { ...state.messages, [m.id]: m } };
}

/** Drop a message (the same state if it is not there). */
export function removeMessage(state: IChatState, id: string): IChatState {
  if (!state.messages[id]) {
    return state;
  }
  const messages = { ...state.messages };
  delete messages[id];
  return { ...state, order: state.order.filter(x => x !== id), messages };
}

/** Add or replace a tool call card. */
export function putTool(state: IChatState, tc: IToolCallState): IChatState {
  return { ...state, toolCalls: { ...state.toolCalls, [tc.id]: tc } };
}
