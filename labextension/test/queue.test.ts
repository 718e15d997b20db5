/**
 * One run at a time: messages sent during a run are shown as queued and move
 * after the run's replies when they start; "stop and send"; failed runs stay in the chat.
 */
import { describe, expect, it, vi } from 'vitest';

import type { ThinkApi } from '../src/api';
import {
  ChatAction,
  IChatState,
  initialState,
  isRunning,
  reduceAll
} from '../src/reducer';
import { ChatStore } from '../src/store';
import type { IWireMessage } from '../src/tokens';

const S = { id: 's1', title: 'Chat' };

function run(actions: ChatAction[], state?: IChatState): IChatState {
  return reduceAll(state ?? initialState(S), actions);
}

const msg = (
  id: string,
  content: string,
  status: IWireMessage['status'],
  role: IWireMessage['role'] = 'user'
): IWireMessage => ({ id, role, content, status });

const firstRun: ChatAction[] = [
  { type: 'message', message: msg('u1', 'one', 'complete') },
  { type: 'task_queued', task_id: 'r1', run_id: 'r1', detail: '' },
  { type: 'status', status: 'thinking', run_id: 'r1' },
  { type: 'text_delta', message_id: 'a1', delta: 'Part of', run_id: 'r1' }
];

describe('a message sent during a run', () => {
  it('is shown as queued and does not replace the run in flight', () => {
    const s = run([
      ...firstRun,
      { type: 'message', message: msg('u2', 'two', 'queued') },
      {
        type: 'task_queued',
        task_id: 'r2',
        run_id: 'r2',
        detail: 'queued: starts when the current request ends'
      }
    ]);
    expect(s.messages.u2.status).toBe('queued');
    expect(s.run?.id).toBe('r1');
    expect(s.streamingId).toBe('a1');
    expect(isRunning(s)).toBe(true);
  });

  it('moves after the replies it waited for when its run starts', () => {
    const s = run([
      ...firstRun,
      { type: 'message', message: msg('u2', 'two', 'queued') },
      {
        type: 'text_delta',
        message_id: 'a1',
        delta: ' the answer',
        run_id: 'r1'
      },
      { type: 'text_delta', message_id: 'a2', delta: 'Step 2', run_id: 'r1' },
      { type: 'task_complete', task_id: 'r1', run_id: 'r1' },
      { type: 'message', message: msg('u2', 'two', 'complete') },
      { type: 'task_queued', task_id: 'r2', run_id: 'r2', detail: '' },
      { type: 'status', status: 'thinking', run_id: 'r2' }
    ]);
    expect(s.order).toEqual(['u1', 'a1', 'a2', 'u2']);
    expect(s.messages.u2.status).toBe('complete');
    expect(s.messages.a1.status).toBe('complete');
    expect(s.run?.id).toBe('r2');
  });

  it('cancelled with the run (Stop) it stays, marked cancelled', () => {
    const s = run([
      ...firstRun,
      { type: 'message', message: msg('u2', 'two', 'queued') },
      { type: 'message', message: msg('u2', 'two', 'cancelled') },
      { type: 'task_failed', task_id: 'r2', run_id: 'r2', detail: 'cancelled' },
      { type: 'task_failed', task_id: 'r1', run_id: 'r1', detail: 'cancelled' }
    ]);
    expect(s.messages.u2.status).toBe('cancelled');
    expect(isRunning(s)).toBe(false);
    expect(s.error).toBeNull();
  });
});

describe('a run that failed', () => {
  it('keeps its reason in the chat (a system message) and in the banner', () => {
    const reason =
      'rate limited by the model endpoint (429) (after 3 attempts)';
    const s = run([
      ...firstRun,
      {
        type: 'error',
        message: 'rate limited (429)',
        code: 'rate_limit',
        run_id: 'r1'
      },
      {
        type: 'message',
        message: {
          ...msg('n1', `The request failed: ${reason}`, 'error', 'system'),
          error: reason
        }
      },
      { type: 'task_failed', task_id: 'r1', run_id: 'r1', detail: reason }
    ]);
    expect(s.messages.n1).toMatchObject({ role: 'system', status: 'error' });
    expect(s.order[s.order.length - 1]).toBe('n1');
    expect(s.error?.message).toBe(reason);
    expect(isRunning(s)).toBe(false);
  });
});

describe('ChatStore.send', () => {
  it('queues while a run is in flight, and "stop and send" asks to interrupt', async () => {
    const api = {
      wsUrl: (id: string) => `ws://x/${id}`,
      sendMessage: vi.fn(async (_id: string, content: string) => ({
        message: msg('u9', content, 'queued')
      })),
      cancel: vi.fn(async () => undefined)
    } as unknown as ThinkApi;
    const store = new ChatStore(
      api,
      cb => cb(),
      () => ({ send: () => true, dispose: () => undefined })
    );
    store.open(S);
    store.dispatch({ type: 'status', status: 'thinking' });
    await store.send('later');
    expect(api.sendMessage).toHaveBeenLastCalledWith('s1', 'later', {});
    expect(store.state.messages.u9.status).toBe('queued');
    await store.send('now', { interrupt: true });
    expect(api.sendMessage).toHaveBeenLastCalledWith('s1', 'now', {
      interrupt: true
    });
    expect(api.cancel).not.toHaveBeenCalled(); // the server cancels, in one request
  });
});
