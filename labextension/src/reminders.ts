/**
 * Reminders: a JupyterLab notification when one fires, whatever session the
 * sidebar shows, with an action that opens its session in the Think sidebar.
 *
 * One user-level socket per tab (`/api/think/notifications`, authenticated like every
 * route). After a reload or a dropped connection it asks for what fired since the last
 * frame it saw (`?since=`), so a reminder that fired while no tab was open, or late at the
 * server's start, still shows; repeats are dropped by the firing's key.
 */

import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { SessionSocket } from './ws';

/** The command (added by the chat plugin) that opens a session in the sidebar. */
export const OPEN_SESSION = 'think:open-session';

/**
 * A `reminder` frame of the notifications socket, or a `job` frame (a background job
 * ended; `name` and `state` say which and how).
 */
export interface IReminderFrame {
  type: 'reminder' | 'job';
  name?: string;
  state?: string;
  key: string;
  session_id: string;
  session_title?: string;
  session_kind?: string;
  session_path?: string;
  message: string;
  due_at?: number;
  fired_at?: number;
  late?: boolean;
  schedule_id?: string;
  message_id?: string | null;
  run_id?: string | null;
}

/** What a tab remembers between reloads: where to resume, which firings it showed. */
export interface IReminderMemory {
  since: number;
  seen: string[];
}

const MEMORY_KEY = 'think:reminders';
const MAX_SEEN = 200;
/** A tab with no memory yet asks for the last hour (the server keeps a day). */
const FIRST_LOOK_S = 3600;

/** Read the memory (a fresh one when absent or unreadable). */
export function loadMemory(
  storage: Pick<Storage, 'getItem'>,
  now: number
): IReminderMemory {
  try {
    const raw = JSON.parse(storage.getItem(MEMORY_KEY) ?? 'null');
    if (
      raw &&
      typeof raw.since === 'number' &&
      Array.isArray(raw.seen) &&
      raw.seen.every((k: unknown) => typeof k === 'string')
    ) {
      return { since: raw.since, seen: raw.seen };
    }
  } catch {
    // unreadable: start afresh
  }
  return { since: now - FIRST_LOOK_S, seen: [] };
}

/** Save the memory (best effort: private modes may refuse). */
export function saveMemory(
  storage: Pick<Storage, 'setItem'>,
  memory: IReminderMemory
): void {
  try {
    storage.setItem(MEMORY_KEY, JSON.stringify(memory));
  } catch {
    // not kept: a reload may show a reminder again, nothing worse
  }
}

/**
 * Take a frame: the notification to show (null for a repeat or another frame) and the
 * memory after it.
 */
export function takeFrame(
  memory: IReminderMemory,
  frame: { type?: unknown; [k: string]: unknown }
): { show: IReminderFrame | null; memory: IReminderMemory } {
  if (
    (frame.type !== 'reminder' && frame.type !== 'job') ||
    typeof frame.key !== 'string' ||
    typeof frame.session_id !== 'string'
  ) {
    return { show: null, memory };
  }
  const reminder = frame as unknown as IReminderFrame;
  const since = Math.max(memory.since, Number(reminder.fired_at) || 0);
  if (memory.seen.includes(reminder.key)) {
    return { show: null, memory: { ...memory, since } };
  }
  const seen = [...memory.seen, reminder.key].slice(-MAX_SEEN);
  return { show: reminder, memory: { since, seen } };
}

/** The notification's text: the reminder, its session, and whether it is late. */
export function reminderText(r: IReminderFrame): string {
  const where = r.session_title ? ` (${r.session_title})` : '';
  if (r.type === 'job') {
    return `Think${where}: ${r.message}`;
  }
  const late = r.late
    ? ' — late: it fell due while Jupyter was not running'
    : '';
  return `Reminder${where}: ${r.message}${late}`;
}

/** The socket URL, with `since` and the token when the settings have one. */
export function notificationsUrl(
  settings: Pick<ServerConnection.ISettings, 'wsUrl' | 'token'>,
  since: number
): string {
  const base = URLExt.join(settings.wsUrl, 'api', 'think', 'notifications');
  const query = [`since=${encodeURIComponent(String(since))}`];
  if (settings.token) {
    query.push(`token=${encodeURIComponent(settings.token)}`);
  }
  return `${base}?${query.join('&')}`;
}

/** Listens for reminders and shows them; `dispose()` closes the socket. */
export class ReminderNotifier {
  constructor(
    private readonly show: (r: IReminderFrame) => void,
    private readonly storage: Pick<Storage, 'getItem' | 'setItem'>,
    settings: Pick<
      ServerConnection.ISettings,
      'wsUrl' | 'token'
    > = ServerConnection.makeSettings(),
    connect: (
      url: () => string,
      onFrame: (frame: { type?: unknown }) => void
    ) => { dispose(): void } = (url, onFrame) =>
      new SessionSocket(url, { onFrame, onOpenChange: () => undefined })
  ) {
    this.memory = loadMemory(storage, Date.now() / 1000);
    // The URL is made at each (re)connect: it resumes from the last frame seen.
    this.socket = connect(
      () => notificationsUrl(settings, this.memory.since),
      frame => this.onFrame(frame)
    );
  }

  /** Take one frame from the socket. */
  onFrame(frame: { type?: unknown; [k: string]: unknown }): void {
    const { show, memory } = takeFrame(this.memory, frame);
    if (memory !== this.memory) {
      this.memory = memory;
      saveMemory(this.storage, memory);
    }
    if (show) {
      this.show(show);
    }
  }

  /** Close the socket. */
  dispose(): void {
    this.socket.dispose();
  }

  private memory: IReminderMemory;
  private readonly socket: { dispose(): void };
}

/** Show a reminder as a JupyterLab notification whose action opens its session. */
export function notify(app: JupyterFrontEnd, r: IReminderFrame): string {
  const failed = r.type === 'job' && r.state !== 'done';
  const level = r.late || failed ? 'warning' : 'info';
  return Notification.emit(reminderText(r), level, {
    autoClose: false,
    actions: [
      {
        label: 'Open session',
        caption: 'Open this session in the Think sidebar',
        callback: () =>
          void app.commands.execute(OPEN_SESSION, { id: r.session_id })
      }
    ]
  });
}

/** The reminders plugin. */
export const remindersPlugin: JupyterFrontEndPlugin<void> = {
  id: '@think/jupyter-think:reminders',
  description:
    'Notifications of Think reminders, with a link to their session.',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    const notifier = new ReminderNotifier(
      r => notify(app, r),
      window.localStorage
    );
    window.addEventListener('beforeunload', () => notifier.dispose());
  }
};
