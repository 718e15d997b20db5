/**
 * A WebSocket to one session that reconnects with exponential backoff.
 *
 * Every (re)connect gets `sync`, `history` and any `partial` from the server, and the
 * reducer drops replayed events by `seq`, so a dropped socket loses nothing.
 */

import type { ServerFrame } from './wire';

/** Callbacks of a session socket. */
export interface ISocketHandlers {
  onFrame(frame: ServerFrame): void;
  onOpenChange(open: boolean): void;
}

/** Backoff bounds in milliseconds. */
export const BACKOFF_MIN_MS = 500;
export const BACKOFF_MAX_MS = 10000;
const PING_MS = 25000;

/** The delay before reconnect attempt `n` (0-based), with jitter. */
export function backoffDelay(n: number, random = Math.random): number {
  const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** n);
  return Math.round(base / 2 + (random() * base) / 2);
}

/** One reconnecting socket; `dispose()` closes it for good. */
export class SessionSocket {
  constructor(
    private readonly url: () => string,
    private readonly handlers: ISocketHandlers,
    private readonly factory: (url: string) => WebSocket = u => new WebSocket(u)
  ) {
    this.connect();
    document.addEventListener('visibilitychange', this.onVisible);
  }

  /** True while the socket is open. */
  get isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** Send a control frame (`cancel`, `ping`); false if the socket is not open. */
  send(frame: { type: string; [k: string]: unknown }): boolean {
    if (!this.isOpen) {
      return false;
    }
    this.ws!.send(JSON.stringify(frame));
    return true;
  }

  /** Close now and reconnect at once (e.g. after the network came back). */
  reconnectNow(): void {
    if (this.disposed) {
      return;
    }
    this.attempt = 0;
    this.ws?.close();
  }

  /** Close the socket and stop reconnecting. */
  dispose(): void {
    if (this.disposed) {
      return;
    }
    this.disposed = true;
    document.removeEventListener('visibilitychange', this.onVisible);
    window.clearTimeout(this.retryTimer);
    window.clearInterval(this.pingTimer);
    this.ws?.close();
    this.ws = null;
  }

  private connect(): void {
    if (this.disposed) {
      return;
    }
    const ws = this.factory(this.url());
    this.ws = ws;
    ws.onopen = () => {
      this.attempt = 0;
      this.handlers.onOpenChange(true);
      this.pingTimer = window.setInterval(
        () => this.send({ type: 'ping' }),
        PING_MS
      );
    };
    ws.onmessage = ev => {
      let frame: ServerFrame;
      try {
        frame = JSON.parse(String(ev.data));
      } catch {
        console.warn('think: ignoring a non-JSON frame');
        return;
      }
      if (frame && typeof frame.type === 'string') {
        this.handlers.onFrame(frame);
      }
    };
    ws.onclose = () => {
      window.clearInterval(this.pingTimer);
      if (this.ws !== ws) {
        return;
      }
      this.ws = null;
      this.handlers.onOpenChange(false);
      if (!this.disposed) {
        this.retryTimer = window.setTimeout(
          () => this.connect(),
          backoffDelay(this.attempt++)
        );
      }
    };
  }

  private onVisible = (): void => {
    // A tab coming back from the background reconnects without waiting for backoff.
    if (document.visibilityState === 'visible' && !this.ws && !this.disposed) {
      window.clearTimeout(this.retryTimer);
      this.attempt = 0;
      this.connect();
    }
  };

  private ws: WebSocket | null = null;
  private attempt = 0;
  private disposed = false;
  private retryTimer = 0;
  private pingTimer = 0;
}
