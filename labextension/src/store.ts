/**
 * The chat controller of one panel: the open session's socket, its state and actions.
 *
 * Frames are queued and applied once per animation frame, so a fast stream costs one
 * React render per frame, not one per token.
 */

import { ISignal, Signal } from '@lumino/signaling';

import { ISendOptions, ThinkApi } from './api';
import { sessionUsageFromReport } from './longSession';
import { ChatAction, IChatState, initialState, reduceAll } from './reducer';
import type { ISession } from './tokens';
import type { ServerFrame } from './wire';
import { ISocketHandlers, SessionSocket } from './ws';

/** What the store needs of a session socket. */
export interface ISessionSocket {
  send(frame: { type: string; [k: string]: unknown }): boolean;
  dispose(): void;
}

/** Opens a socket to a URL (given lazily: a reconnect may need a fresh token). */
export type SocketFactory = (
  url: () => string,
  handlers: ISocketHandlers
) => ISessionSocket;

/** A raw frame as the debug view lists it. */
export interface IDebugEvent {
  at: number;
  frame: ServerFrame;
}

const MAX_DEBUG_EVENTS = 500;

/** Owns the state of the chat for the session the panel shows. */
export class ChatStore {
  constructor(
    readonly api: ThinkApi,
    private readonly schedule: (cb: () => void) => void = cb =>
      window.requestAnimationFrame(cb),
    private readonly connect: SocketFactory = (url, handlers) =>
      new SessionSocket(url, handlers)
  ) {}

  /** The current state (immutable; replaced on every change). */
  get state(): IChatState {
    return this._state;
  }

  /** The id of the open session, or null. */
  get sessionId(): string | null {
    return this._state.session?.id ?? null;
  }

  /** Raw frames received, newest last (kept for the debug view). */
  get debugEvents(): readonly IDebugEvent[] {
    return this._debug;
  }

  /** Emitted for every frame, after it is applied (action log refresh, tests). */
  get frameReceived(): ISignal<this, ServerFrame> {
    return this._frameReceived;
  }

  /** Subscribe to state changes (for `useSyncExternalStore`). */
  subscribe = (listener: () => void): (() => void) => {
    this._listeners.add(listener);
    return () => this._listeners.delete(listener);
  };

  /** Snapshot getter for `useSyncExternalStore`. */
  getSnapshot = (): IChatState => this._state;

  /** Open a session: reset the state and connect its socket. */
  open(session: ISession | null): void {
    this._socket?.dispose();
    this._socket = null;
    this._queue = [];
    this._debug = [];
    this.setState(initialState(session));
    if (!session) {
      return;
    }
    this._socket = this.connect(() => this.api.wsUrl(session.id), {
      onFrame: frame => this.enqueue(frame),
      onOpenChange: connected =>
        this.enqueue({ type: 'local/connected', connected })
    });
    void this.refreshUsage();
  }

  /** Reload the session's token and cost totals (live `usage` frames add to them). */
  async refreshUsage(): Promise<void> {
    const id = this.sessionId;
    if (!id) {
      return;
    }
    try {
      const report = await this.api.usage(id);
      if (this.sessionId === id) {
        this.dispatch({
          type: 'local/usage',
          usage: sessionUsageFromReport(report)
        });
      }
    } catch (e) {
      console.warn('think: usage not loaded', e);
    }
  }

  /** Apply a local action at once. */
  dispatch(action: ChatAction): void {
    this.flush();
    this.setState(reduceAll(this._state, [action]));
  }

  /** Send a user message (optimistically shown until the server stores it). */
  async send(content: string, opts: ISendOptions = {}): Promise<void> {
    const id = this.sessionId;
    if (!id || (!content.trim() && !opts.attachments?.length)) {
      return;
    }
    const localId = `local-${Date.now()}-${++this._localCount}`;
    this.dispatch({
      type: 'local/user_message',
      id: localId,
      content,
      attachments: opts.attachments
    });
    try {
      const r = await this.api.sendMessage(id, content, opts);
      if (this.sessionId === id) {
        this.dispatch({ type: 'local/user_ack', localId, message: r.message });
      }
    } catch (e) {
      this.dispatch({ type: 'local/send_failed', localId, error: String(e) });
      throw e;
    }
  }

  /** Stop the run in flight. */
  async stop(): Promise<void> {
    const id = this.sessionId;
    if (!id) {
      return;
    }
    // The REST call is the one that is acknowledged; the socket frame is faster.
    this._socket?.send({ type: 'cancel' });
    await this.api.cancel(id);
  }

  /** Replace user message `messageId` by `content`: truncate from it and resend. */
  async edit(
    messageId: string,
    content: string,
    opts: ISendOptions = {}
  ): Promise<void> {
    const id = this.sessionId;
    if (!id) {
      return;
    }
    if (this._state.status !== 'idle') {
      await this.api.cancel(id);
    }
    await this.api.truncate(id, messageId);
    this.dispatch({ type: 'local/truncate', messageId });
    await this.send(content, opts);
  }

  /** Resend the last user message, dropping what came after it. */
  async retry(opts: ISendOptions = {}): Promise<void> {
    const s = this._state;
    const last = [...s.order]
      .reverse()
      .find(i => s.messages[i].role === 'user');
    if (!last) {
      return;
    }
    await this.edit(last, s.messages[last].content, opts);
  }

  /** Read the conversation again (a rewind or another tab changed its branch). */
  async reload(): Promise<void> {
    const id = this.sessionId;
    if (!id) {
      return;
    }
    const page = await this.api.listMessages(id);
    if (this.sessionId === id) {
      const cursor = page.next_cursor;
      this.dispatch({
        type: 'history',
        messages: page.messages,
        next_cursor: typeof cursor === 'number' ? cursor : null
      });
    }
  }

  /** Load an older page of history; false when there is none. */
  async loadOlder(): Promise<boolean> {
    const id = this.sessionId;
    const cursor = this._state.nextCursor;
    if (!id || cursor === null) {
      return false;
    }
    const page = await this.api.listMessages(id, cursor);
    if (this.sessionId === id) {
      this.dispatch({
        type: 'local/prepend',
        messages: page.messages,
        nextCursor: page.next_cursor
      });
    }
    return page.messages.length > 0;
  }

  /** Close the socket. */
  dispose(): void {
    this._socket?.dispose();
    this._socket = null;
    this._listeners.clear();
  }

  private enqueue(frame: ChatAction): void {
    this._queue.push(frame);
    if (!frame.type.startsWith('local/')) {
      this._debug.push({ at: Date.now(), frame: frame as ServerFrame });
      if (this._debug.length > MAX_DEBUG_EVENTS) {
        this._debug.splice(0, this._debug.length - MAX_DEBUG_EVENTS);
      }
    }
    if (!this._scheduled) {
      this._scheduled = true;
      this.schedule(() => this.flush());
    }
  }

  private flush(): void {
    this._scheduled = false;
    if (!this._queue.length) {
      return;
    }
    const queue = this._queue;
    this._queue = [];
    this.setState(reduceAll(this._state, queue));
    for (const f of queue) {
      if (!f.type.startsWith('local/')) {
        this._frameReceived.emit(f as ServerFrame);
      }
    }
    // A run ended: the server's totals converge what live frames may have missed.
    if (
      queue.some(f => f.type === 'task_complete' || f.type === 'task_failed')
    ) {
      void this.refreshUsage();
    }
  }

  private setState(next: IChatState): void {
    if (next === this._state) {
      return;
    }
    this._state = next;
    for (const l of this._listeners) {
      l();
    }
  }

  private _state: IChatState = initialState();
  private _socket: ISessionSocket | null = null;
  private _queue: ChatAction[] = [];
  private _scheduled = false;
  private _debug: IDebugEvent[] = [];
  private _localCount = 0;
  private _listeners = new Set<() => void>();
  private _frameReceived = new Signal<this, ServerFrame>(this);
}
