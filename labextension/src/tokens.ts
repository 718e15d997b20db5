/**
 * Types of the Think server API (`/api/think`): what the REST routes return and take.
 *
 * The frames of the session socket (agent events, `sync`, `history`, ...) are generated
 * from their Python declaration into `wire.ts`; import them from there.
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
  /** The model that wrote an assistant message, and the role it served. */
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

/** A file, image, notebook cells or a variable's summary sent with a message. */
export interface IAttachment {
  kind: 'image' | 'file' | 'cells' | 'variables';
  name?: string;
  mime?: string;
  /** The stored upload (`POST .../attachments`). */
  blob?: string;
  size?: number;
  path?: string;
  cells?: { id?: string; cell_type: string; source: string }[];
  /** A variable's summary (`@name` in the composer), as the model reads it. */
  text?: string;
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

/** Kinds of task the model may create. */
export type TaskType = 'explore' | 'code' | 'test' | 'review' | 'plan' | 'fix';

/** Statuses of a task of the task graph (not of a run: see `ITaskFrame` in wire.ts). */
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

/** The run in flight, as `sync` reports it. */
export interface IRunInfo {
  id?: string;
  run_id?: string;
  message_id?: string;
  status?: string;
  [key: string]: unknown;
}

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
  /** The files the call changed: a row with files has Undo. */
  files?: string[];
  /** The undo that reverted this call's changes, if one did. */
  undone_by?: string | null;
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
