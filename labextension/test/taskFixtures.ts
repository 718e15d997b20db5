/**
 * Task objects and a tasks model over a real chat store whose API and socket are faked
 * (as in store.test.ts): frames go in through the socket handlers, `flush()` runs what
 * the store and the model scheduled for the next animation frame.
 */

import { vi } from 'vitest';

import type { ThinkApi } from '../src/api';
import { ChatStore } from '../src/store';
import { TasksModel } from '../src/tasksModel';
import type { ITask, IWireMessage } from '../src/tokens';
import type { ServerFrame } from '../src/wire';
import type { ISocketHandlers } from '../src/ws';

let clock = 1000;

/** A later `updated_at` than any task made so far. */
export function later(): number {
  clock += 1;
  return clock;
}

/** A task object as the server sends it (`updated_at` moves on with each call). */
export function task(id: string, over: Partial<ITask> = {}): ITask {
  clock += 1;
  return {
    id,
    session_id: 's1',
    parent_id: null,
    title: id.toUpperCase(),
    description: '',
    type: 'code',
    status: 'pending',
    dependencies: [],
    result: null,
    error: null,
    depth: 0,
    progress: 0,
    subagent: null,
    message_id: 'm1',
    created_at: clock,
    updated_at: clock,
    ...over
  };
}

/** A chat store on a fake API and socket (as in store.test.ts), with a tasks model. */
export function setup(
  opts: { storage?: Map<string, string>; ownSchedule?: boolean } = {}
) {
  let handlers: ISocketHandlers | null = null;
  const queue: (() => void)[] = [];
  const tree = { tasks: [] as unknown[], progress: 0 };
  const facet: Record<string, IWireMessage[]> = {};
  const api = {
    wsUrl: (id: string) => `ws://x/${id}`,
    usage: vi.fn(async () => ({
      total: { calls: 0, tokens_in: 0, tokens_out: 0, cost: null },
      by_role: {},
      by_model: {}
    })),
    listTasks: vi.fn(async () => tree),
    listMessages: vi.fn(
      async (_s: string, _b: unknown, _l: number, f?: string) => ({
        messages: facet[f ?? ''] ?? [],
        next_cursor: null
      })
    )
  } as unknown as ThinkApi;
  const store = new ChatStore(
    api,
    cb => queue.push(cb),
    (_url, h) => {
      handlers = h;
      return { send: () => true, dispose: () => undefined };
    }
  );
  const kv = opts.storage ?? new Map<string, string>();
  const storage = {
    getItem: (k: string) => kv.get(k) ?? null,
    setItem: (k: string, v: string) => void kv.set(k, v),
    removeItem: (k: string) => void kv.delete(k)
  };
  // `ownSchedule`: the model notifies as in the browser (a microtask), not on `flush()`.
  const model = opts.ownSchedule
    ? new TasksModel(store, storage)
    : new TasksModel(store, storage, cb => queue.push(cb));
  const notified = vi.fn();
  model.subscribe(notified);
  const frame = (f: ServerFrame) => handlers!.onFrame(f);
  const flush = () => {
    while (queue.length) {
      queue.splice(0).forEach(cb => cb());
    }
  };
  store.open({ id: 's1', title: 'T' });
  return { store, api, model, frame, flush, tree, facet, notified, kv };
}

export const settle = async () => {
  for (let i = 0; i < 5; i++) {
    await Promise.resolve();
  }
};
