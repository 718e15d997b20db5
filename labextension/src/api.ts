/**
 * REST client for `/api/think`, through jupyter_server's auth (token and XSRF).
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type { IBranch } from './branches';
import type { IRewindResult, IUndoResult, RestoreWhat } from './rewind';
import type {
  IAction,
  IAttachment,
  IEndpoint,
  IEndpointInput,
  IEndpointTest,
  IIdentity,
  IMessageContext,
  ISession,
  ITaskTree,
  IUsageReport,
  IWireMessage
} from './tokens';
import type { IVariablesAnswer } from './variables';

/** Filters of the action log endpoint. */
export interface IActionFilter {
  tool?: string;
  success?: boolean;
  since?: string;
  until?: string;
  message_id?: string;
}

/** Options sent along with a message (model choice from the settings). */
export interface ISendOptions {
  context?: IMessageContext;
  model?: string;
  endpoint?: string;
  /** Uploaded files and notebook cells. */
  attachments?: IAttachment[];
  /** "Stop and send": cancel the run in flight (and queued ones) first. */
  interrupt?: boolean;
  /** This message's edits go to the session's proposal, even with review mode off. */
  proposeOnly?: boolean;
}

/** A file that was read (an AGENTS.md or a skill's SKILL.md) and where it came from. */
export interface ISkillFound {
  name: string;
  /** `workspace`, `user` or `package:<distribution>`. */
  source: string;
  path: string;
  note: string;
}

/** A file that was refused, and why. */
export interface ISkillProblem {
  name: string;
  source: string;
  path: string;
  reason: string;
}

/** A workspace skill not offered until a person approves this content of it. */
export interface ISkillReview extends ISkillProblem {
  sha256: string;
  /** The SKILL.md a person reviews. */
  text: string;
  /** The session's pending approval of this content (decided by `decideApproval`). */
  approval: { id: string; status: string; summary: string } | null;
}

/** `GET /api/think/skills?session=ID`: what the session's next request loads. */
export interface ISkillsReport {
  instructions: { loaded: ISkillFound[]; invalid: ISkillProblem[] };
  skills: {
    loaded: ISkillFound[];
    invalid: ISkillProblem[];
    review?: ISkillReview[];
  };
}

/** One message that matched (the REST shape). */
/** One agent type a session can run as (`GET /api/think/agents`). */
export interface IAgentType {
  name: string;
  description: string;
  /** `builtin`, `workspace`, `user` or `package:<dist>`. */
  source: string;
  path: string;
  /** `allow`: null for every tool. */
  tools: { allow: string[] | null; deny: string[] };
  model: string;
  approval_policy: string;
}

/** The agent types, the files refused, and (given a session) the session's type. */
export interface IAgentsReport {
  agents: IAgentType[];
  default: string;
  current?: string;
  invalid: { name: string; source: string; path: string; reason: string }[];
}

export interface ISearchHit {
  session_id: string;
  title: string;
  kind: string;
  message_id: string;
  seq: number;
  role: string;
  created_at: number;
  snippet: string;
  /** `[start, end)` offsets of the matches in `snippet`. */
  spans: [number, number][];
  facet: string | null;
  tool: string | null;
  off_branch: boolean;
  link: string;
}

/** `GET /api/think/search`: the hits, and a note when the query was read as plain words. */
export interface ISearchResult {
  query: string;
  notice: string;
  hits: ISearchHit[];
}

/** An HTTP error with the server's message. */
export class ThinkApiError extends Error {
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message);
  }
}

/** Typed calls to the Think server extension. */
export class ThinkApi {
  constructor(
    readonly settings: ServerConnection.ISettings = ServerConnection.makeSettings()
  ) {}

  /** List the sessions, newest first as the server orders them. */
  async listSessions(): Promise<ISession[]> {
    const r = await this.request<{ sessions: ISession[] }>('sessions');
    return r.sessions;
  }

  /** Create a session. */
  createSession(
    body: { title?: string; path?: string } = {}
  ): Promise<ISession> {
    return this.request<ISession>('sessions', 'POST', body);
  }

  /** Get one session. */
  getSession(id: string): Promise<ISession> {
    return this.request<ISession>(`sessions/${enc(id)}`);
  }

  /** Rename a session. */
  renameSession(id: string, title: string): Promise<ISession> {
    return this.request<ISession>(`sessions/${enc(id)}`, 'PATCH', { title });
  }

  /** Delete a session and its history. */
  async deleteSession(id: string): Promise<void> {
    await this.request(`sessions/${enc(id)}`, 'DELETE');
  }

  /** A page of messages older than `before`; `facet`: a side conversation's instead
   * of the chat's (a subagent's: `subagent:<task id>`). */
  listMessages(
    id: string,
    before?: string | number | null,
    limit = 100,
    facet?: string,
    branch?: string
  ): Promise<{
    messages: IWireMessage[];
    next_cursor: string | number | null;
  }> {
    const q: Record<string, string> = { limit: String(limit) };
    if (before !== undefined && before !== null) {
      q.before = String(before);
    }
    if (facet) {
      q.facet = facet;
    }
    if (branch) {
      q.branch = branch;
    }
    return this.request(`sessions/${enc(id)}/messages${query(q)}`);
  }

  /** Go back to before user message `messageId`: its files, the conversation or both
   * (a run in flight is stopped first). */
  rewind(
    id: string,
    messageId: string,
    restore: RestoreWhat
  ): Promise<IRewindResult> {
    return this.request<IRewindResult>(`sessions/${enc(id)}/rewind`, 'POST', {
      message_id: messageId,
      restore
    });
  }

  /** The branches of a session's conversation, oldest first. */
  async listBranches(id: string): Promise<IBranch[]> {
    const r = await this.request<{ branches: IBranch[] }>(
      `sessions/${enc(id)}/branches`
    );
    return r.branches;
  }

  /** Make another branch of the conversation current; with `files`, take the files to
   * its state too and answer what changed (null without `files`: they stay as they are). */
  async switchBranch(
    id: string,
    branchId: string,
    files = false
  ): Promise<IRewindResult | null> {
    const out = await this.request<IRewindResult>(
      `sessions/${enc(id)}/branches`,
      'POST',
      files ? { branch_id: branchId, files: true } : { branch_id: branchId }
    );
    return files ? out : null;
  }

  /** The session's task tree: roots with their `children`, and the progress. */
  listTasks(id: string): Promise<ITaskTree> {
    return this.request<ITaskTree>(`sessions/${enc(id)}/tasks`);
  }

  /** Send a user message; the server starts a run. */
  sendMessage(
    id: string,
    content: string,
    opts: ISendOptions = {}
  ): Promise<{ message: IWireMessage; run_id?: string }> {
    const body: Record<string, unknown> = { content };
    if (opts.context) {
      body.context = opts.context;
    }
    if (opts.attachments?.length) {
      body.attachments = opts.attachments;
    }
    if (opts.interrupt) {
      body.interrupt = true;
    }
    if (opts.proposeOnly) {
      body.propose_only = true;
    }
    if (opts.model || opts.endpoint) {
      body.options = {
        ...(opts.model ? { model: opts.model } : {}),
        ...(opts.endpoint ? { base_url: opts.endpoint } : {})
      };
    }
    return this.request(`sessions/${enc(id)}/messages`, 'POST', body);
  }

  /** Stop the run in flight. */
  async cancel(id: string): Promise<void> {
    await this.request(`sessions/${enc(id)}/cancel`, 'POST', {});
  }

  /** Drop `messageId` and every message after it (edit and retry). */
  async truncate(id: string, messageId: string): Promise<void> {
    await this.request(`sessions/${enc(id)}/truncate`, 'POST', {
      message_id: messageId
    });
  }

  /** The action log, filtered. */
  async listActions(
    id: string,
    filter: IActionFilter = {}
  ): Promise<IAction[]> {
    const q: Record<string, string> = {};
    for (const [k, v] of Object.entries(filter)) {
      if (v !== undefined && v !== '') {
        q[k] = String(v);
      }
    }
    const r = await this.request<{ actions: IAction[] }>(
      `sessions/${enc(id)}/actions${query(q)}`
    );
    return r.actions;
  }

  /** Undo the file changes of one action-log row alone (three-way, through the rooms). */
  undoAction(id: string, actionId: string): Promise<IUndoResult> {
    return this.request<IUndoResult>(
      `sessions/${enc(id)}/actions/${enc(actionId)}/undo`,
      'POST',
      {}
    );
  }

  /** Tokens and estimated cost of a session, in total and by role and model. */
  usage(id: string): Promise<IUsageReport> {
    return this.request<IUsageReport>(`sessions/${enc(id)}/usage`);
  }

  /** The whole content of a message (a tool's whole output, even if the model saw less). */
  async messageContent(id: string, messageId: string): Promise<string> {
    const r = await this.request<{ content: string }>(
      `sessions/${enc(id)}/messages/${enc(messageId)}/content`
    );
    return r.content;
  }

  /** Upload a file or image; the answer goes in a message's `attachments`. */
  uploadAttachment(id: string, data: Blob, name: string): Promise<IAttachment> {
    return this.request<IAttachment>(
      `sessions/${enc(id)}/attachments${query({ name })}`,
      'POST',
      data
    );
  }

  /** Stored events after a sequence number (debug view). */
  async listEvents(id: string, after = 0): Promise<Record<string, unknown>[]> {
    const r = await this.request<{ events: Record<string, unknown>[] }>(
      `sessions/${enc(id)}/events${query({ after: String(after) })}`
    );
    return r.events;
  }

  /** The model endpoint in force on the server (never its key). */
  getModel(): Promise<IEndpoint> {
    return this.request<IEndpoint>('model');
  }

  /** Save the endpoint for this server (the setup card); an omitted key keeps the saved one. */
  saveModel(body: IEndpointInput): Promise<IEndpoint> {
    return this.request<IEndpoint>('model', 'PUT', body);
  }

  /** Forget the saved endpoint (the server's environment applies again). */
  forgetModel(): Promise<IEndpoint> {
    return this.request<IEndpoint>('model', 'DELETE');
  }

  /** Ask an endpoint for its models, from the server. */
  testModel(body: IEndpointInput): Promise<IEndpointTest> {
    return this.request<IEndpointTest>('model/test', 'POST', body);
  }

  /** The WebSocket URL of a session, with the token when the settings have one. */
  wsUrl(id: string): string {
    const base = URLExt.join(
      this.settings.wsUrl,
      'api/think/sessions',
      enc(id),
      'ws'
    );
    const token = this.settings.token;
    return token ? `${base}?token=${encodeURIComponent(token)}` : base;
  }

  /** Approvals of a session (`status`: pending, approved, rejected). */
  async listApprovals(
    id: string,
    status?: string
  ): Promise<Record<string, unknown>[]> {
    const q = status ? query({ status }) : '';
    const r = await this.request<{ approvals: Record<string, unknown>[] }>(
      `sessions/${enc(id)}/approvals${q}`
    );
    return r.approvals;
  }

  /** Set the session's approval policy (`null`: the kernel's configured one). */
  setApprovalPolicy(
    id: string,
    approval: Record<string, unknown> | null
  ): Promise<ISession> {
    return this.request<ISession>(`sessions/${enc(id)}`, 'PATCH', { approval });
  }

  /** Decide an approval; 409 (thrown) when another surface decided first. */
  decideApproval(
    id: string,
    approvalId: string,
    body: Record<string, unknown>
  ): Promise<Record<string, unknown>> {
    return this.request(
      `sessions/${enc(id)}/approvals/${enc(approvalId)}`,
      'POST',
      body
    );
  }

  /** The person using this tab, as jupyter_server's identity provider names them. */
  async me(): Promise<IIdentity> {
    const url = URLExt.join(this.settings.baseUrl, 'api/me');
    const response = await ServerConnection.makeRequest(url, {}, this.settings);
    if (!response.ok) {
      throw new ThinkApiError(
        response.status,
        `GET /api/me: ${response.status}`
      );
    }
    const data = (await response.json()) as { identity: IIdentity };
    return data.identity;
  }

  /** The AGENTS.md files and skills a session's next request loads. */
  async listSkills(sessionId: string): Promise<ISkillsReport> {
    return this.request<ISkillsReport>(
      `skills${query({ session: sessionId })}`
    );
  }

  /** The agent types a session can run as, and its current one. */
  listAgents(sessionId: string): Promise<IAgentsReport> {
    return this.request<IAgentsReport>(
      `agents${query({ session: sessionId })}`
    );
  }

  /** Change a session's agent type (null: the default); 400 names what is wrong. */
  setSessionAgent(id: string, agent: string | null): Promise<ISession> {
    return this.request<ISession>(`sessions/${enc(id)}`, 'PATCH', { agent });
  }

  /** Full-text search over every session of the workspace, best first. */
  searchSessions(q: string, limit = 20): Promise<ISearchResult> {
    return this.request<ISearchResult>(
      `search${query({ q, limit: String(limit) })}`
    );
  }

  /** Take out of the memory file the line a `remember` call added; the line removed. */
  async undoRemember(line: string, sessionId: string): Promise<string> {
    const r = await this.request<{ removed: string }>('memory/undo', 'POST', {
      line,
      session_id: sessionId
    });
    return r.removed;
  }

  /** The variables of an open notebook's kernel, read without running its code. */
  inspectVariables(path: string, names: string[]): Promise<IVariablesAnswer> {
    return this.request<IVariablesAnswer>(
      `variables${query({ path, names: names.join(',') })}`
    );
  }

  private async request<T = unknown>(
    path: string,
    method = 'GET',
    body?: unknown
  ): Promise<T> {
    const url = URLExt.join(this.settings.baseUrl, 'api/think', path);
    const init: RequestInit = { method };
    if (body instanceof Blob) {
      init.body = body; // raw bytes (an attachment upload)
      init.headers = { 'Content-Type': 'application/octet-stream' };
    } else if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { 'Content-Type': 'application/json' };
    }
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(url, init, this.settings);
    } catch (e) {
      throw new ThinkApiError(0, `Network error: ${String(e)}`);
    }
    const text = await response.text();
    let data: any = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = { message: text };
      }
    }
    if (!response.ok) {
      const msg =
        data?.message ?? data?.reason ?? data?.error ?? response.statusText;
      throw new ThinkApiError(response.status, `${response.status}: ${msg}`);
    }
    return data as T;
  }
}

function enc(s: string): string {
  return encodeURIComponent(s);
}

function query(q: Record<string, string>): string {
  const s = new URLSearchParams(q).toString();
  return s ? `?${s}` : '';
}
