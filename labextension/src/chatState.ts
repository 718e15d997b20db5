/**
 * The chat state of one session and the small immutable updates every reducer step uses.
 */

import type {
  AgentStatus,
  IAttachment,
  IRunInfo,
  ISession,
  MessageStatus
} from './tokens';

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
  /** The stored tool message (its whole output is served from it). */
  resultId?: string;
  /** Size of the whole output when the model saw only a summary of it. */
  fullSize?: number;
  /** Images the store keeps for this call (a screenshot), shown again after a reload. */
  storedImages?: IStoredImage[];
}

/** An image attached to a stored tool message (`GET .../attachments/{index}` serves it). */
export interface IStoredImage {
  sessionId: string;
  messageId: string;
  index: number;
  /** The page a screenshot shows. */
  name?: string;
}

/** Tokens and cost of the model call that wrote a message. */
export interface IMessageUsage {
  role: string;
  model: string;
  tokensIn: number;
  tokensOut: number;
  tokensCached: number;
  cost: number | null;
  estimated: boolean;
}

/** A compaction: older messages the model now sees as one summary. */
export interface ICompactionState {
  id: string;
  summary: string;
  count: number;
  firstId: string;
  tailId: string;
  toSeq: number;
  tokensBefore?: number;
  tokensAfter?: number;
  model?: string;
}

/** Tokens and cost of the session so far. */
export interface ISessionUsage {
  calls: number;
  tokensIn: number;
  tokensOut: number;
  cost: number | null;
  /** False when some call had no price: the cost is then a lower bound. */
  costComplete: boolean;
  estimated: number;
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
  /** The machine-readable code of `error` (e.g. `not_configured`, `auth`). */
  errorCode?: string;
  /** The role and model of the call that wrote it, and its tokens (assistant messages). */
  usage?: IMessageUsage;
  attachments?: IAttachment[];
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
  /** Compactions of this session, by summary message id. */
  compactions: Record<string, ICompactionState>;
  /** Session totals (from `GET .../usage`, then live `usage` frames). */
  usage: ISessionUsage;
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
    awaitingRun: false,
    compactions: {},
    usage: {
      calls: 0,
      tokensIn: 0,
      tokensOut: 0,
      cost: null,
      costComplete: true,
      estimated: 0
    }
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
