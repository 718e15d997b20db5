/**
 * The live apps of the open session: what `serve_app` started, as the server lists them.
 *
 * `AppsModel` reads `GET sessions/{id}/apps` when a session opens, takes each `apps` frame
 * of the session socket, and asks again when a tool that changes apps returns (so a
 * server that sends no frame still shows them). Stop, Stop all and Restart post to the
 * session's `apps` route (`{action, name?}`: never a path below an app's, which is all the
 * app's own) and show the answer. The sidebar's list (appsView.tsx) and the app tabs
 * (appTab.ts) read it.
 *
 * An app's address is always built here from the session id and the app's name: never taken
 * from a tool's text, so a tab can only ever show the server's authenticated app proxy.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { Signal, type ISignal } from '@lumino/signaling';

import type { ToolStatus } from './chatState';

/** How an app stands. */
export type AppState =
  'starting' | 'running' | 'exited' | 'crashed' | 'stopped';

/** One app as the server describes it. */
export interface IApp {
  name: string;
  url: string;
  state: AppState | string;
  command?: string;
  started_at?: number;
  exit_code?: number | null;
  /**
   * Where a browser opens it, below the server's base URL: the app's path with a key
   * (`.../apps/{name}/@{key}/`) that lets its page's own requests in without the login
   * cookie, which a sandboxed page does not send.
   */
  open_url?: string;
  /** Why it is not running (a crash, a stop), when the server knows. */
  error?: string | null;
  log_tail?: string;
}

/** The app a tool card names: its session and name. */
export interface IAppRef {
  sessionId: string;
  name: string;
}

/** Tools whose result changes the session's apps. */
export const APP_TOOLS = new Set(['serve_app', 'stop_app']);

/** A name the server accepts for an app (and so one we may put in a path). */
const APP_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** The proxy path a `serve_app` result names. */
const APP_PATH = /\/api\/think\/sessions\/([^/\s]+)\/apps\/([^/\s?#]+)\//;

/** True for a name that can be an app's. */
export function isAppName(name: unknown): name is string {
  return typeof name === 'string' && APP_NAME.test(name);
}

/** True while an app's process lives. */
export function isLive(state: string): boolean {
  return state === 'starting' || state === 'running';
}

/** The `apps` route of a session (`baseUrl` ends with `/`). */
export function appsUrl(baseUrl: string, sessionId: string): string {
  return URLExt.join(
    baseUrl,
    'api/think/sessions',
    encodeURIComponent(sessionId),
    'apps'
  );
}

/** Where the server serves an app (with the trailing `/` its relative links need). */
export function appUrl(baseUrl: string, ref: IAppRef): string {
  return (
    URLExt.join(appsUrl(baseUrl, ref.sessionId), encodeURIComponent(ref.name)) +
    '/'
  );
}

/**
 * Where a tab shows the app: the row's `open_url` when it is this app's keyed path (so a
 * page's own scripts, images and fetches get in), else the plain app path.
 */
export function openUrl(baseUrl: string, ref: IAppRef, app?: IApp): string {
  const plain = appUrl(baseUrl, ref);
  const given = app?.open_url;
  if (typeof given === 'string' && given) {
    const prefix = plain.slice(baseUrl.length);
    const rest = given.startsWith(prefix) ? given.slice(prefix.length) : '';
    if (/^@[A-Za-z0-9_-]+\/$/.test(rest)) {
      return plain + rest;
    }
  }
  return plain;
}

/** What of a tool call the card offers to read. */
export interface IToolCallLike {
  name: string;
  status: ToolStatus;
  input?: unknown;
  output?: string;
  display?: Record<string, unknown>[];
}

/**
 * The app a finished `serve_app` call started, or null: its name from the result's
 * structured `app` (a display bundle), else from the proxy path its text names, else from
 * its `name` argument (the only source for a call cut by Stop while its app started). The
 * session is the one the card belongs to.
 */
export function appOfToolCall(
  call: IToolCallLike,
  sessionId: string | null
): IAppRef | null {
  const ended = call.status === 'complete' || call.status === 'cancelled';
  if (call.name !== 'serve_app' || !ended || !sessionId) {
    return null;
  }
  for (const bundle of call.display ?? []) {
    const app = (bundle as { app?: { name?: unknown } } | null)?.app;
    if (app && isAppName(app.name)) {
      return { sessionId, name: app.name };
    }
  }
  const m = APP_PATH.exec(call.output ?? '');
  if (m) {
    const name = safeDecode(m[2]);
    if (isAppName(name) && safeDecode(m[1]) === sessionId) {
      return { sessionId, name };
    }
  }
  const arg = (call.input as { name?: unknown } | null)?.name;
  return isAppName(arg) ? { sessionId, name: arg } : null;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return '';
  }
}

/** The rows of an `apps` answer or frame that name an app (bad rows are dropped). */
export function appRows(value: unknown): IApp[] {
  if (!Array.isArray(value)) {
    return [];
  }
  return value.filter(
    (a): a is IApp =>
      !!a &&
      typeof a === 'object' &&
      isAppName((a as IApp).name) &&
      typeof (a as IApp).state === 'string'
  );
}

/** The frames the model reads (the session socket's, loosely typed: `apps` is new). */
export interface IFrameSource {
  readonly sessionId: string | null;
  readonly frameReceived: ISignal<unknown, { type: string }>;
}

/** The open session's apps, kept up to date; `changed` fires on each new list. */
export class AppsModel {
  constructor(
    private readonly source: IFrameSource,
    readonly settings: ServerConnection.ISettings = ServerConnection.makeSettings()
  ) {
    source.frameReceived.connect(this._onFrame, this);
  }

  /** The session the list belongs to. */
  get sessionId(): string | null {
    return this._sessionId;
  }

  /** The apps of the session, as last heard. */
  get apps(): readonly IApp[] {
    return this._apps;
  }

  /** Fired after the list changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The app called `name` in `sessionId`, if listed. */
  find(sessionId: string, name: string): IApp | undefined {
    return this._sessionId === sessionId
      ? this._apps.find(a => a.name === name)
      : undefined;
  }

  /** Follow `sessionId` (null: none): its list is read from the server. */
  open(sessionId: string | null): Promise<void> {
    if (sessionId !== this._sessionId) {
      this._sessionId = sessionId;
      this._set([]);
    }
    return this.refresh();
  }

  /** Read the list again (a failure keeps the last one: the frames still come). */
  async refresh(): Promise<void> {
    const sid = this._sessionId;
    if (!sid) {
      return;
    }
    try {
      const r = await this._request(appsUrl(this.settings.baseUrl, sid));
      if (sid === this._sessionId) {
        this._set(appRows((r as { apps?: unknown }).apps));
      }
    } catch (e) {
      console.warn('think: apps not loaded', e);
    }
  }

  /** Stop an app; the list shows how it ended. */
  async stop(name: string): Promise<void> {
    await this._post('stop', name);
    await this.refresh();
  }

  /** Stop every app of the session that runs; the list shows how they ended. */
  async stopAll(): Promise<void> {
    await this._post('stop');
    await this.refresh();
  }

  /** Start an app again with its command; the list shows its new row. */
  async restart(name: string): Promise<void> {
    const row = appRows([await this._post('restart', name)])[0];
    if (row) {
      this._put(row);
    }
    await this.refresh();
  }

  /** Stop following frames. */
  dispose(): void {
    this.source.frameReceived.disconnect(this._onFrame, this);
    Signal.clearData(this);
  }

  private _onFrame(_: unknown, frame: { type: string }): void {
    const f = frame as {
      type: string;
      session_id?: string;
      apps?: unknown;
      name?: string;
    };
    if (this.source.sessionId !== this._sessionId) {
      void this.open(this.source.sessionId);
      return;
    }
    if (f.type === 'apps') {
      if (!f.session_id || f.session_id === this._sessionId) {
        this._set(appRows(f.apps));
      }
    } else if (f.type === 'tool_result' && APP_TOOLS.has(f.name ?? '')) {
      void this.refresh();
    }
  }

  /** `action` on the app `name` (no name: every app of the session). */
  private async _post(
    action: 'stop' | 'restart',
    name?: string
  ): Promise<unknown> {
    const sid = this._sessionId;
    if (!sid || (name !== undefined && !isAppName(name))) {
      throw new Error(`no app ${name} in this session`);
    }
    const body = JSON.stringify(
      name === undefined ? { action } : { action, name }
    );
    return this._request(appsUrl(this.settings.baseUrl, sid), {
      method: 'POST',
      body
    });
  }

  private async _request(
    url: string,
    init: RequestInit = {}
  ): Promise<unknown> {
    const r = await ServerConnection.makeRequest(url, init, this.settings);
    const text = await r.text();
    let data: unknown = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = { message: text };
    }
    if (!r.ok) {
      const msg = (data as { message?: string } | null)?.message;
      throw new Error(`${r.status}: ${msg || r.statusText}`);
    }
    return data;
  }

  private _put(row: IApp): void {
    const others = this._apps.filter(a => a.name !== row.name);
    this._set([...others, row].sort((a, b) => a.name.localeCompare(b.name)));
  }

  private _set(apps: IApp[]): void {
    this._apps = apps;
    this._changed.emit();
  }

  private _sessionId: string | null = null;
  private _apps: IApp[] = [];
  private _changed = new Signal<this, void>(this);
}
