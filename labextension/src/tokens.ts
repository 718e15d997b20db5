/**
 * Wire types of the Think server API (`/api/think`) and its WebSocket frames.
 *
 * Event frames mirror `think_kernel/agent/events.py` `to_dict()`; live frames may
 * also carry `seq` (the store's event sequence number) and `session_id`.
 */

/** A chat session as the server returns it. */
/** Where a session was started: the sidebar, a think notebook, `%%think` in a notebook. */
export type SessionKind = 'chat' | 'notebook' | 'magic' | 'mcp';

/** The model endpoint in force on the server, as the browser may see it (no key). */
export interface IEndpoint {
  configured: boolean;
  /** `saved`: the setup card; `environment`: env or config; `''`: nowhere. */
  source: 'saved' | 'environment' | '';
  base_url: string;
  effective_url: string;
  model: string;
  api_key_set: boolean;
  api_key_hint: string;
}

/** What the setup card sends (the key only when typed). */
export interface IEndpointInput {
  base_url: string;
  api_key?: string;
  model?: string;
}

/** The answer of "Test connection". */
export interface IEndpointTest {
  ok: boolean;
  models?: string[];
  error?: string;
}

export interface ISession {
  id: string;
  title: string;
  kind?: SessionKind;
  path?: string | null;
  created_at?: string;
  updated_at?: string;
  status?: string;
  [key: string]: unknown;
}

/** A tool call as stored on an assistant message (our shape or OpenAI's). */
export interface IWireToolCall {
  id: string;
  name?: string;
  input?: unknown;
  arguments?: unknown;
  type?: string;
  function?: { name: string; arguments: unknown };
}

/** `queued`: a user message sent while another run was busy; it runs after that one. */
export type MessageStatus =
  'pending' | 'queued' | 'streaming' | 'complete' | 'error' | 'cancelled';

/** A stored message as the server returns it. */
export interface IWireMessage {
  id: string;
  role: 'user' | 'assistant' | 'tool' | 'system';
  content: string | null;
  tool_calls?: IWireToolCall[] | null;
  tool_call_id?: string | null;
  name?: string | null;
  reasoning?: string | null;
  status?: MessageStatus;
  created_at?: string;
  duration_ms?: number | null;
  ok?: boolean | null;
  summary?: string | null;
  /** The stored tool result summary (the store's column name). */
  result_summary?: string | null;
  error?: string | null;
  /** In a `partial` frame: the event seq the snapshot includes. Elsewhere: message order. */
  seq?: number;
  /** The model that wrote an assistant message, and the role it served (issue 14). */
  model?: string | null;
  model_role?: string | null;
  tokens_in?: number | null;
  tokens_out?: number | null;
  tokens_cached?: number | null;
  tokens_reasoning?: number | null;
  cost?: number | null;
  /** A tool message: the size of the whole output when the model saw less of it. */
  output_size?: number | null;
  attachments?: IAttachment[] | null;
  /** A `summary` message: what the compaction covers. */
  compaction?: ICompactionInfo | null;
  [key: string]: unknown;
}

/** A file, image or notebook cells sent with a message. */
export interface IAttachment {
  kind: 'image' | 'file' | 'cells';
  name?: string;
  mime?: string;
  /** The stored upload (`POST .../attachments`). */
  blob?: string;
  size?: number;
  path?: string;
  cells?: { id?: string; cell_type: string; source: string }[];
}

/** What a compaction summary covers (the `compaction` field of a `summary` message). */
export interface ICompactionInfo {
  first_id: string;
  tail_id: string;
  to_seq: number;
  count: number;
  tokens_before?: number;
  tokens_after?: number;
}

/** Token and cost totals (`GET .../usage`). */
export interface IUsageTotals {
  calls: number;
  tokens_in: number;
  tokens_out: number;
  tokens_cached: number;
  tokens_reasoning: number;
  cost: number | null;
  cost_complete: boolean;
  estimated: number;
}

/** `GET .../usage`. */
export interface IUsageReport {
  total: IUsageTotals;
  by_role: Record<string, IUsageTotals>;
  by_model: Record<string, IUsageTotals>;
  role_models?: Record<string, string[]>;
}

/** Agent states; `running` is what `sync` reports while a run is in flight. */
export type AgentStatus =
  'idle' | 'thinking' | 'executing' | 'waiting' | 'running';

/** Fields every live frame may carry. */
interface IFrameBase {
  seq?: number;
  session_id?: string;
  /** The run (a durable task) the event belongs to. */
  run_id?: string;
}

export interface IStatusFrame extends IFrameBase {
  type: 'status';
  status: AgentStatus;
  detail?: string;
}
export interface ITextDeltaFrame extends IFrameBase {
  type: 'text_delta';
  message_id: string;
  delta: string;
}
export interface ITextDoneFrame extends IFrameBase {
  type: 'text_done';
  message_id: string;
  text: string;
}
export interface IReasoningFrame extends IFrameBase {
  type: 'reasoning';
  message_id: string;
  delta: string;
}
export interface IToolCallFrame extends IFrameBase {
  type: 'tool_call';
  id: string;
  name: string;
  input: unknown;
  message_id?: string;
}
export interface IToolProgressFrame extends IFrameBase {
  type: 'tool_progress';
  call_id: string;
  stream: string;
  text?: string;
  data?: Record<string, unknown> | null;
}
export interface IToolResultFrame extends IFrameBase {
  type: 'tool_result';
  call_id: string;
  name: string;
  output: string;
  duration_ms: number;
  ok: boolean;
  summary?: string;
  display?: Record<string, unknown>[];
  /** The stored tool message; the whole output is served from it. */
  result_id?: string;
  /** Size of the whole output when the model saw a summary (0 otherwise). */
  full_size?: number;
}
/** Tokens and cost of one model call (issue 14). */
export interface IUsageFrame extends IFrameBase {
  type: 'usage';
  message_id: string;
  role: string;
  model: string;
  purpose?: string;
  tokens_in: number;
  tokens_out: number;
  tokens_cached?: number;
  tokens_reasoning?: number;
  cost?: number | null;
  estimated?: boolean;
}
/** Older messages were summarised to fit the context window (issue 14). */
export interface ICompactionFrame extends IFrameBase {
  type: 'compaction';
  message_id: string;
  summary: string;
  count: number;
  first_id: string;
  tail_id: string;
  to_seq: number;
  tokens_before?: number;
  tokens_after?: number;
  role?: string;
  model?: string;
}
export interface IChatFrame extends IFrameBase {
  type: 'chat';
  message_id: string;
  content: string;
  stop_reason?: string;
}
export interface IErrorFrame extends IFrameBase {
  type: 'error';
  message: string;
  code?: string;
  retryable?: boolean;
}
export interface ITaskFrame extends IFrameBase {
  type: 'task_queued' | 'task_retrying' | 'task_complete' | 'task_failed';
  task_id: string;
  detail?: string;
  attempt?: number;
}
export interface IFileChangedFrame extends IFrameBase {
  type: 'file_changed';
  path: string;
  action: string;
}

/** Kinds of task the model may create (issue 12). */
export type TaskType = 'explore' | 'code' | 'test' | 'review' | 'plan' | 'fix';

/** Statuses of a task of the task graph (not of a run: see `ITaskFrame`). */
export type TaskStatus =
  'pending' | 'in_progress' | 'blocked' | 'complete' | 'failed' | 'cancelled';

/** What became of a task's subagent. */
export type SubagentStatus =
  'running' | 'complete' | 'error' | 'interrupted' | 'cancelled' | 'timeout';

/** The subagent working on a task (`started_at`, `ended_at`: seconds since the epoch). */
export interface ISubagentInfo {
  status: SubagentStatus;
  model: string;
  started_at?: number | null;
  ended_at?: number | null;
}

/** A task of the task graph, whole (every `task_updated` carries all of it). */
export interface ITask {
  id: string;
  session_id?: string | null;
  parent_id: string | null;
  title: string;
  description?: string;
  type: TaskType | string;
  status: TaskStatus;
  dependencies: string[];
  result?: string | null;
  error?: string | null;
  depth?: number;
  /** Progress of the task's subtree, 0..1. */
  progress: number;
  subagent: ISubagentInfo | null;
  message_id?: string | null;
  created_at?: number | string | null;
  updated_at?: number | string | null;
}

/** `GET .../tasks`: root tasks with their `children`, recursively. */
export interface ITaskNode extends ITask {
  children?: ITaskNode[];
}

/** `GET .../tasks`. */
export interface ITaskTree {
  tasks: ITaskNode[];
  progress?: number;
}

/** A task was created or changed (the whole object each time). */
export interface ITaskChangeFrame extends IFrameBase {
  type: 'task_created' | 'task_updated';
  task: ITask;
}
export interface ISubagentSpawnedFrame extends IFrameBase {
  type: 'subagent_spawned';
  task_id: string;
  title?: string;
  model?: string;
}
export interface ISubagentTextDeltaFrame extends IFrameBase {
  type: 'subagent_text_delta';
  task_id: string;
  delta: string;
}
export interface ISubagentToolCallFrame extends IFrameBase {
  type: 'subagent_tool_call';
  task_id: string;
  id: string;
  name: string;
  input: unknown;
}
export interface ISubagentToolResultFrame extends IFrameBase {
  type: 'subagent_tool_result';
  task_id: string;
  call_id: string;
  name: string;
  output: string;
  ok: boolean;
  duration_ms?: number;
}
export interface ISubagentCompleteFrame extends IFrameBase {
  type: 'subagent_complete';
  task_id: string;
  result: string;
}
export interface ISubagentErrorFrame extends IFrameBase {
  type: 'subagent_error';
  task_id: string;
  message: string;
  code?: string;
}

/** Frames of a subagent's own stream (shown in its drill-in, never in the chat). */
export type SubagentFrame =
  | ISubagentSpawnedFrame
  | ISubagentTextDeltaFrame
  | ISubagentToolCallFrame
  | ISubagentToolResultFrame
  | ISubagentCompleteFrame
  | ISubagentErrorFrame;

/** The run in flight, as `sync` reports it. */
export interface IRunInfo {
  id?: string;
  run_id?: string;
  message_id?: string;
  status?: string;
  [key: string]: unknown;
}

export interface ISyncFrame extends IFrameBase {
  type: 'sync';
  session?: ISession;
  status?: AgentStatus;
  /** The detail of the last status (e.g. what an approval is for, a retry's countdown). */
  detail?: string;
  run?: IRunInfo | null;
}
export interface IHistoryFrame extends IFrameBase {
  type: 'history';
  messages: IWireMessage[];
  next_cursor?: string | number | null;
}
/** A tool call that runs, with its live output so far (in a `partial` frame). */
export interface ILiveTool {
  id: string;
  name: string;
  input?: unknown;
  message_id?: string;
  progress: string;
}
/** What the run is doing as the tab connects: the message it streams, its running tools. */
export interface IPartialFrame extends IFrameBase {
  type: 'partial';
  message?: IWireMessage | null;
  tools?: ILiveTool[];
  /** The seq of the last event the snapshot includes. */
  upto?: number;
}
/** A whole stored message (e.g. a user message sent from another tab). */
export interface IMessageFrame extends IFrameBase {
  type: 'message';
  message: IWireMessage;
}

export type AgentEventFrame =
  | IStatusFrame
  | ITextDeltaFrame
  | ITextDoneFrame
  | IReasoningFrame
  | IToolCallFrame
  | IToolProgressFrame
  | IToolResultFrame
  | IChatFrame
  | IErrorFrame
  | ITaskFrame
  | IFileChangedFrame
  | IUsageFrame
  | ICompactionFrame
  | ITaskChangeFrame
  | SubagentFrame;

export type ServerFrame =
  AgentEventFrame | ISyncFrame | IHistoryFrame | IPartialFrame | IMessageFrame;

/** One row of the action log. */
export interface IAction {
  id: string | number;
  session_id: string;
  ts: string | number;
  tool: string;
  action: string;
  input_summary: string;
  output_summary: string;
  duration_ms: number;
  success: boolean;
  error?: string | null;
  message_id?: string | null;
}

/** Context attached to a message: the active document and selected cells. */
export interface IMessageContext {
  path?: string;
  kind?: 'notebook' | 'file';
  cells?: { id?: string; index: number; cell_type: string; source: string }[];
}

/** The user's settings for the chat (never an API key). */
export interface IThinkSettings {
  model: string;
  endpoint: string;
  debugEvents: boolean;
  attachContext: boolean;
}

/** The person using a tab (jupyter_server's identity provider, `GET /api/me`). */
export interface IIdentity {
  username: string;
  display_name?: string;
  name?: string;
}
