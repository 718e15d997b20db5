import { describe, expect, it, vi } from 'vitest';

import type { ThinkApi } from '../src/api';
import { ChatStore } from '../src/store';
import type { ServerFrame } from '../src/wire';
import type { ISocketHandlers } from '../src/ws';

/** A store with a fake API and socket; frames are applied when `flush()` is called. */
function setup() {
  let handlers: ISocketHandlers | null = null;
  const sent: unknown[] = [];
  const queue: (() => void)[] = [];
  const api = {
    wsUrl: (id: string) => `ws://x/api/think/sessions/${id}/ws`,
    sendMessage: vi.fn(async (_id: string, content: string) => ({
      message: { id: 'u1', role: 'user', content, status: 'complete' }
    })),
    cancel: vi.fn(async () => undefined),
    truncate: vi.fn(async () => undefined),
    usage: vi.fn(async () => ({
      total: {
        calls: 2,
        tokens_in: 300,
        tokens_out: 20,
        tokens_cached: 0,
        tokens_reasoning: 0,
        cost: null,
        cost_complete: true,
        estimated: 0
      },
      by_role: {},
      by_model: {}
    }))
  } as unknown as ThinkApi;
  const store = new ChatStore(
    api,
    cb => queue.push(cb),
    (url, h) => {
      handlers = h;
      expect(url()).toBe('ws://x/api/think/sessions/s1/ws');
      return { send: f => sent.push(f) > 0, dispose: () => undefined };
    }
  );
  store.open({ id: 's1', title: 'T' });
  const frame = (f: ServerFrame) => handlers!.onFrame(f);
  const flush = () => queue.splice(0).forEach(cb => cb());
  return { store, api, frame, flush, sent };
}

describe('ChatStore', () => {
  it('applies a burst of frames in one state change per frame', () => {
    const { store, frame, flush } = setup();
    const listener = vi.fn();
    store.subscribe(listener);
    for (const d of ['a', 'b', 'c']) {
      frame({ type: 'text_delta', message_id: 'm1', delta: d });
    }
    expect(listener).not.toHaveBeenCalled();
    flush();
    expect(listener).toHaveBeenCalledTimes(1);
    expect(store.state.messages.m1.content).toBe('abc');
    expect(store.debugEvents.map(e => e.frame.type)).toEqual([
      'text_delta',
      'text_delta',
      'text_delta'
    ]);
  });

  it('send shows the message at once, then the stored copy', async () => {
    const { store, api } = setup();
    const sending = store.send('hello');
    const [local] = store.state.order;
    expect(store.state.messages[local]).toMatchObject({
      content: 'hello',
      local: true
    });
    await sending;
    expect(api.sendMessage).toHaveBeenCalledWith('s1', 'hello', {});
    expect(store.state.order).toEqual(['u1']);
  });

  it('retry truncates from the last user message and resends it', async () => {
    const { store, api, frame, flush } = setup();
    frame({
      type: 'history',
      messages: [
        { id: 'u0', role: 'user', content: 'first', status: 'complete' },
        { id: 'a0', role: 'assistant', content: 'r', status: 'complete' },
        { id: 'u9', role: 'user', content: 'again', status: 'complete' },
        { id: 'a9', role: 'assistant', content: 'bad', status: 'error' }
      ]
    });
    flush();
    await store.retry();
    expect(api.truncate).toHaveBeenCalledWith('s1', 'u9');
    expect(api.sendMessage).toHaveBeenCalledWith('s1', 'again', {});
    expect(store.state.order).toEqual(['u0', 'a0', 'u1']);
  });

  it('stop sends a cancel frame and calls the cancel endpoint', async () => {
    const { store, api, sent } = setup();
    await store.stop();
    expect(sent).toEqual([{ type: 'cancel' }]);
    expect(api.cancel).toHaveBeenCalledWith('s1');
  });

  it('opening another session starts from a clean state', () => {
    const { store, frame, flush } = setup();
    frame({ type: 'text_delta', message_id: 'm1', delta: 'x', seq: 9 });
    flush();
    store.open({ id: 's1', title: 'again' });
    expect(store.state.order).toEqual([]);
    expect(store.state.lastSeq).toBe(0);
  });
});

describe('session usage', () => {
  it('loads the totals when a session opens, then after each run', async () => {
    const { store, api, frame, flush } = setup(); // opens session s1
    await vi.waitFor(() => expect(store.state.usage.calls).toBe(2));
    expect(api.usage).toHaveBeenCalledTimes(1);
    expect(store.state.usage.tokensIn).toBe(300);
    frame({ type: 'task_complete', task_id: 'r1', run_id: 'r1' });
    flush();
    await vi.waitFor(() => expect(api.usage).toHaveBeenCalledTimes(2));
  });
});
