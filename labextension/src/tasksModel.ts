/**
 * The open session's task tree and subagent streams, following the chat store.
 *
 * The tree loads from `GET .../tasks` on every (re)connect (the socket replays no events)
 * and follows `task_*` frames; subagent frames feed the drill-in streams. The chat store
 * hands frames over once per animation frame, and this model tells its views once per
 * batch, so four subagents streaming at once cost one render of the tasks area per frame,
 * and none of the message list.
 */

import type { ChatStore } from './store';
import {
  applySubagentFrame,
  historyFailed,
  historyRequested,
  ISubagentStream,
  newStream,
  Streams,
  withHistory,
  withOlder
} from './subagentStream';
import { EMPTY_GRAPH, ITaskGraph, mergeTree, upsertTask } from './taskGraph';
import type { ServerFrame, SubagentFrame } from './wire';

/** What the tasks views render. */
export interface ITasksSnapshot {
  graph: ITaskGraph;
  streams: Streams;
  /** The task whose subagent the drill-in shows, or null. */
  drill: string | null;
  /** Why the tree could not be loaded, if it could not. */
  loadError: string | null;
}

const EMPTY: ITasksSnapshot = {
  graph: EMPTY_GRAPH,
  streams: {},
  drill: null,
  loadError: null
};

/** Messages of a facet page (the drill-in asks for the newest ones first). */
export const FACET_PAGE = 100;
const DRILL_KEY = 'think:subagent:';

/** Follows the chat store's session and frames; loads through its REST API. */
export class TasksModel {
  constructor(
    readonly store: ChatStore,
    private readonly storage: Pick<
      Storage,
      'getItem' | 'setItem' | 'removeItem'
    > | null = typeof window === 'undefined' ? null : window.sessionStorage,
    // Wrapped: a bare `queueMicrotask` called as a method throws "Illegal invocation".
    private readonly schedule: (cb: () => void) => void = cb =>
      queueMicrotask(cb)
  ) {
    store.frameReceived.connect((_, frame) => this.onFrame(frame));
    store.subscribe(() => this.follow());
    this.follow();
  }

  /** Subscribe to changes (for `useSyncExternalStore`). */
  subscribe = (listener: () => void): (() => void) => {
    this._listeners.add(listener);
    return () => this._listeners.delete(listener);
  };

  /** Snapshot getter for `useSyncExternalStore`. */
  getSnapshot = (): ITasksSnapshot => this._snap;

  /** The id of the drilled-in task (a primitive: selecting it re-renders little). */
  getDrill = (): string | null => this._snap.drill;

  /** Show the stream of `taskId`'s subagent; its stored history loads if needed. */
  open(taskId: string): void {
    const session = this._session;
    if (!session) {
      return;
    }
    this.storage?.setItem(DRILL_KEY + session, taskId);
    const task = this._snap.graph.tasks[taskId];
    // Not followed in this tab: what the task says of its subagent until frames come.
    const s =
      this._snap.streams[taskId] ??
      newStream(taskId, {
        status: task?.subagent?.status ?? 'running',
        model: task?.subagent?.model ?? '',
        title: task?.title ?? ''
      });
    this.set({
      ...this._snap,
      drill: taskId,
      streams: { ...this._snap.streams, [taskId]: s }
    });
    if (!s.whole && s.history !== 'loading' && s.history !== 'loaded') {
      void this.loadHistory(taskId);
    }
  }

  /** Back to the chat. */
  close(): void {
    if (this._session) {
      this.storage?.removeItem(DRILL_KEY + this._session);
    }
    if (this._snap.drill !== null) {
      this.set({ ...this._snap, drill: null });
    }
  }

  /** Load the tree again (every (re)connect does). */
  async reload(): Promise<void> {
    const session = this._session;
    if (!session) {
      return;
    }
    try {
      const tree = await this.store.api.listTasks(session);
      if (this._session !== session) {
        return;
      }
      this.set({
        ...this._snap,
        graph: mergeTree(this._snap.graph, tree),
        loadError: null
      });
      this.restoreDrill(session);
    } catch (e) {
      if (this._session === session) {
        this.set({ ...this._snap, loadError: String(e) });
      }
    }
  }

  /** Load the stored messages of a subagent (its facet), newest page. */
  async loadHistory(taskId: string): Promise<void> {
    const session = this._session;
    const s = this._snap.streams[taskId];
    if (!session || !s) {
      return;
    }
    this.putStream(historyRequested(s));
    try {
      const page = await this.store.api.listMessages(
        session,
        null,
        FACET_PAGE,
        `subagent:${taskId}`
      );
      const now = this._snap.streams[taskId];
      if (this._session === session && now) {
        this.putStream(withHistory(now, page.messages, page.next_cursor));
      }
    } catch (e) {
      const now = this._snap.streams[taskId];
      if (this._session === session && now) {
        this.putStream(historyFailed(now, String(e)));
      }
    }
  }

  /** Load an older page of a subagent's messages; false when there is none. */
  async loadOlder(taskId: string): Promise<boolean> {
    const session = this._session;
    const s = this._snap.streams[taskId];
    if (!session || !s || s.nextCursor === null) {
      return false;
    }
    const page = await this.store.api.listMessages(
      session,
      s.nextCursor,
      FACET_PAGE,
      `subagent:${taskId}`
    );
    const now = this._snap.streams[taskId];
    if (this._session === session && now) {
      this.putStream(withOlder(now, page.messages, page.next_cursor));
    }
    return page.messages.length > 0;
  }

  /** A different session is open: forget this one's tasks. */
  private follow(): void {
    const id = this.store.sessionId;
    if (id === this._session) {
      return;
    }
    this._session = id;
    this._lastSeq = 0;
    this._synced = false;
    this._restore = id ? (this.storage?.getItem(DRILL_KEY + id) ?? null) : null;
    this.set(EMPTY);
  }

  /** After a reload, the drill-in that was open opens again once its task is known. */
  private restoreDrill(session: string): void {
    const id = this._restore;
    if (id && this._snap.graph.tasks[id]) {
      this._restore = null;
      if (this._session === session && this._snap.drill === null) {
        this.open(id);
      }
    }
  }

  private onFrame(frame: ServerFrame): void {
    const seq = (frame as { seq?: unknown }).seq;
    if (typeof seq === 'number') {
      if (seq <= this._lastSeq) {
        return; // a replayed duplicate
      }
      this._lastSeq = seq;
    }
    switch (frame.type) {
      case 'sync':
        this.onSync();
        return;
      case 'task_created':
      case 'task_updated': {
        const graph = upsertTask(this._snap.graph, frame.task);
        if (graph !== this._snap.graph) {
          this.set({ ...this._snap, graph });
        }
        return;
      }
      case 'subagent_spawned':
      case 'subagent_text_delta':
      case 'subagent_tool_call':
      case 'subagent_tool_result':
      case 'subagent_complete':
      case 'subagent_error':
        this.onSubagent(frame);
        return;
      default:
        return;
    }
  }

  /** Every connect: load the tree. A reconnect may have missed frames: what was followed
   * whole is not any more, and the stream shown loads its history again. */
  private onSync(): void {
    if (this._synced) {
      const streams: Record<string, ISubagentStream> = {};
      for (const [id, s] of Object.entries(this._snap.streams)) {
        streams[id] = s.whole ? { ...s, whole: false } : s;
      }
      this.set({ ...this._snap, streams });
      if (this._snap.drill) {
        void this.loadHistory(this._snap.drill);
      }
    }
    this._synced = true;
    void this.reload();
  }

  private onSubagent(frame: SubagentFrame): void {
    const streams = applySubagentFrame(this._snap.streams, frame);
    if (streams === this._snap.streams) {
      return;
    }
    this.set({ ...this._snap, streams });
    const s = streams[frame.task_id];
    // It ended: a stream pieced together from a reload and live frames converges on the
    // store's copy (the step in flight at the reload is whole only there).
    if (
      (frame.type === 'subagent_complete' || frame.type === 'subagent_error') &&
      s &&
      !s.whole &&
      s.history === 'loaded'
    ) {
      void this.loadHistory(frame.task_id);
    }
  }

  private putStream(s: ISubagentStream): void {
    this.set({
      ...this._snap,
      streams: { ...this._snap.streams, [s.taskId]: s }
    });
  }

  private set(next: ITasksSnapshot): void {
    if (next === this._snap) {
      return;
    }
    this._snap = next;
    // One notification per batch of frames (the store flushes once per animation frame).
    if (!this._pending) {
      this._pending = true;
      this.schedule(() => {
        this._pending = false;
        for (const l of this._listeners) {
          l();
        }
      });
    }
  }

  private _snap: ITasksSnapshot = EMPTY;
  private _session: string | null = null;
  private _lastSeq = 0;
  private _synced = false;
  private _restore: string | null = null;
  private _pending = false;
  private _listeners = new Set<() => void>();
}
