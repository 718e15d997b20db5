import { describe, expect, it } from 'vitest';

import {
  ChatAction,
  IChatState,
  MAX_PROGRESS_CHARS,
  initialState,
  isRunning,
  reduce,
  reduceAll
} from '../src/reducer';
import type { IWireMessage } from '../src/tokens';

const S = { id: 's1', title: 'Chat' };

function run(actions: ChatAction[], state?: IChatState): IChatState {
  return reduceAll(state ?? initialState(S), actions);
}

function texts(state: IChatState): string[] {
  return state.order.map(id => state.messages[id].content);
}

const user = (id: string, content: string): IWireMessage => ({
  id,
  role: 'user',
  content,
  status: 'complete'
});

describe('text streaming', () => {
  it('appends deltas to one streaming assistant message', () => {
    const s = run([
      { type: 'status', status: 'thinking' },
      { type: 'text_delta', message_id: 'a1', delta: 'Hel' },
      { type: 'text_delta', message_id: 'a1', delta: 'lo' }
    ]);
    expect(s.order).toEqual(['a1']);
    expect(s.messages.a1).toMatchObject({
      role: 'assistant',
      content: 'Hello',
      status: 'streaming'
    });
    expect(s.streamingId).toBe('a1');
    expect(s.status).toBe('thinking');
  });

  it('text_done replaces the text, chat completes the message', () => {
    const s = run([
      { type: 'text_delta', message_id: 'a1', delta: 'Hel' },
      { type: 'text_done', message_id: 'a1', text: 'Hello!' }
    ]);
    expect(s.messages.a1.content).toBe('Hello!');
    const done = reduce(s, {
      type: 'chat',
      message_id: 'a1',
      content: 'Hello!',
      stop_reason: 'stop'
    });
    expect(done.messages.a1.status).toBe('complete');
    expect(done.streamingId).toBeNull();
  });

  it('only the streaming message gets a new identity', () => {
    const base = run([
      { type: 'history', messages: [user('u1', 'hi')] },
      { type: 'text_delta', message_id: 'a1', delta: 'x' }
    ]);
    const next = reduce(base, {
      type: 'text_delta',
      message_id: 'a1',
      delta: 'y'
    });
    expect(next.messages.u1).toBe(base.messages.u1);
    expect(next.messages.a1).not.toBe(base.messages.a1);
    expect(next.messages.a1.content).toBe('xy');
  });

  it('a cancelled chat is marked cancelled and idle settles the run', () => {
    const s = run([
      { type: 'text_delta', message_id: 'a1', delta: 'partial' },
      {
        type: 'chat',
        message_id: 'a1',
        content: 'partial',
        stop_reason: 'cancelled'
      },
      { type: 'status', status: 'idle' }
    ]);
    expect(s.messages.a1.status).toBe('cancelled');
    expect(s.status).toBe('idle');
  });

  it('status idle completes a message that was left streaming', () => {
    const s = run([
      { type: 'text_delta', message_id: 'a1', delta: 'x' },
      { type: 'status', status: 'idle' }
    ]);
    expect(s.messages.a1.status).toBe('complete');
    expect(s.streamingId).toBeNull();
  });
});

describe('tool cards', () => {
  const call: ChatAction = {
    type: 'tool_call',
    id: 'c1',
    name: 'bash',
    input: { command: 'ls' },
    message_id: 'a1'
  };

  it('tool_call creates a running card on its message', () => {
    const s = run([
      { type: 'text_delta', message_id: 'a1', delta: 'Let me look.' },
      call
    ]);
    expect(s.messages.a1.toolCallIds).toEqual(['c1']);
    expect(s.toolCalls.c1).toMatchObject({
      name: 'bash',
      input: { command: 'ls' },
      status: 'running',
      messageId: 'a1'
    });
  });

  it('tool_progress streams output into the card', () => {
    const s = run([
      call,
      { type: 'tool_progress', call_id: 'c1', stream: 'stdout', text: 'a\n' },
      { type: 'tool_progress', call_id: 'c1', stream: 'stdout', text: 'b\n' }
    ]);
    expect(s.toolCalls.c1.progress).toBe('a\nb\n');
  });

  it('tool_progress output is capped', () => {
    const big = 'x'.repeat(MAX_PROGRESS_CHARS);
    const s = run([
      call,
      { type: 'tool_progress', call_id: 'c1', stream: 'stdout', text: big },
      { type: 'tool_progress', call_id: 'c1', stream: 'stdout', text: 'END' }
    ]);
    expect(s.toolCalls.c1.progress.length).toBe(MAX_PROGRESS_CHARS);
    expect(s.toolCalls.c1.progress.endsWith('END')).toBe(true);
  });

  it('tool_result ok completes the card with duration and output', () => {
    const s = run([
      call,
      {
        type: 'tool_result',
        call_id: 'c1',
        name: 'bash',
        output: 'file.txt',
        duration_ms: 12.5,
        ok: true,
        summary: '1 line'
      }
    ]);
    expect(s.toolCalls.c1).toMatchObject({
      status: 'complete',
      output: 'file.txt',
      durationMs: 12.5,
      summary: '1 line'
    });
  });

  it('tool_result not ok marks the card as an error', () => {
    const s = run([
      call,
      {
        type: 'tool_result',
        call_id: 'c1',
        name: 'bash',
        output: 'boom',
        duration_ms: 3,
        ok: false
      }
    ]);
    expect(s.toolCalls.c1.status).toBe('error');
  });

  it('a tool_call without message id joins the streaming message', () => {
    const s = run([
      { type: 'text_delta', message_id: 'a7', delta: 'hm' },
      { type: 'tool_call', id: 'c9', name: 'read_file', input: {} }
    ]);
    expect(s.messages.a7.toolCallIds).toEqual(['c9']);
  });

  it('a late duplicate tool_call does not reopen a finished card', () => {
    const s = run([
      call,
      {
        type: 'tool_result',
        call_id: 'c1',
        name: 'bash',
        output: 'ok',
        duration_ms: 1,
        ok: true
      }
    ]);
    expect(reduce(s, call)).toBe(s);
  });

  it('a run that ends with a card still running marks it cancelled', () => {
    const s = run([call, { type: 'status', status: 'idle' }]);
    expect(s.toolCalls.c1.status).toBe('cancelled');
  });
});

describe('reasoning, status, errors, tasks', () => {
  it('reasoning deltas accumulate on the message', () => {
    const s = run([
      { type: 'reasoning', message_id: 'a1', delta: 'First, ' },
      { type: 'reasoning', message_id: 'a1', delta: 'think.' },
      { type: 'text_delta', message_id: 'a1', delta: 'Answer' }
    ]);
    expect(s.messages.a1.reasoning).toBe('First, think.');
    expect(s.messages.a1.content).toBe('Answer');
  });

  it('status events set status and detail; a repeat is a no-op', () => {
    const s = run([{ type: 'status', status: 'executing', detail: 'bash' }]);
    expect(s.status).toBe('executing');
    expect(s.statusDetail).toBe('bash');
    expect(
      reduce(s, { type: 'status', status: 'executing', detail: 'bash' })
    ).toBe(s);
  });

  it('error marks the streaming message and stores the error', () => {
    const s = run([
      { type: 'text_delta', message_id: 'a1', delta: 'x' },
      {
        type: 'error',
        message: 'rate limited',
        code: 'rate_limit',
        retryable: true
      }
    ]);
    expect(s.error).toEqual({
      message: 'rate limited',
      code: 'rate_limit',
      retryable: true
    });
    expect(s.messages.a1.status).toBe('error');
    expect(s.streamingId).toBeNull();
  });

  it('task events track the task state', () => {
    const s = run([
      { type: 'task_queued', task_id: 't1', detail: 'root', attempt: 0 },
      { type: 'task_retrying', task_id: 't1', detail: 'in 2 s', attempt: 1 }
    ]);
    expect(s.tasks.t1).toEqual({
      id: 't1',
      status: 'retrying',
      detail: 'in 2 s',
      attempt: 1
    });
  });

  it('file_changed is recorded and unknown frames are ignored', () => {
    const s = run([{ type: 'file_changed', path: 'a.py', action: 'write' }]);
    expect(s.changedFiles).toEqual([{ path: 'a.py', action: 'write' }]);
    const unknown = { type: 'subagent_spawned' } as unknown as ChatAction;
    expect(reduce(s, unknown)).toBe(s);
  });
});

describe('history replay and reconnect', () => {
  const history: IWireMessage[] = [
    user('u1', 'list files'),
    {
      id: 'a1',
      role: 'assistant',
      content: 'Listing.',
      status: 'complete',
      tool_calls: [
        {
          id: 'c1',
          type: 'function',
          function: { name: 'list_files', arguments: '{"path": "."}' }
        }
      ]
    },
    {
      id: 't1',
      role: 'tool',
      content: 'a.py\nb.py',
      tool_call_id: 'c1',
      name: 'list_files',
      status: 'complete'
    },
    {
      id: 'a2',
      role: 'assistant',
      content: 'Two files.',
      status: 'complete'
    }
  ];

  it('sync sets session, status and run', () => {
    const s = run([
      {
        type: 'sync',
        session: { id: 's1', title: 'Renamed' },
        status: 'thinking',
        run: { id: 'r1', message_id: 'a3' }
      }
    ]);
    expect(s.session?.title).toBe('Renamed');
    expect(s.status).toBe('thinking');
    expect(s.run).toEqual({ id: 'r1', message_id: 'a3' });
    expect(s.connected).toBe(true);
  });

  it('history folds tool messages into the cards of their calls', () => {
    const s = run([{ type: 'history', messages: history }]);
    expect(s.order).toEqual(['u1', 'a1', 'a2']);
    expect(texts(s)).toEqual(['list files', 'Listing.', 'Two files.']);
    expect(s.toolCalls.c1).toMatchObject({
      name: 'list_files',
      input: { path: '.' },
      status: 'complete',
      output: 'a.py\nb.py',
      messageId: 'a1'
    });
  });

  it('a stored tool message keeps its images for the card', () => {
    const shot: IWireMessage[] = [
      {
        id: 'a1',
        role: 'assistant',
        content: '',
        status: 'complete',
        tool_calls: [
          {
            id: 'c9',
            type: 'function',
            function: { name: 'screenshot', arguments: '{}' }
          }
        ]
      },
      {
        id: 't9',
        role: 'tool',
        session_id: 's1',
        content: 'Screenshot of the page',
        tool_call_id: 'c9',
        name: 'screenshot',
        status: 'complete',
        attachments: [
          {
            kind: 'image',
            blob: 'b'.repeat(64),
            mime: 'image/png',
            name: 'https://example.org/'
          }
        ]
      }
    ];
    const s = run([{ type: 'history', messages: shot }]);
    expect(s.toolCalls.c9.storedImages).toEqual([
      {
        sessionId: 's1',
        messageId: 't9',
        index: 0,
        name: 'https://example.org/'
      }
    ]);
    expect(
      run([{ type: 'history', messages: history }]).toolCalls.c1.storedImages
    ).toBeUndefined();
  });

  it('replaying the same history keeps message identities', () => {
    const s = run([{ type: 'history', messages: history }]);
    const again = reduce(s, { type: 'history', messages: history });
    expect(again.messages.u1).toBe(s.messages.u1);
    expect(again.messages.a1).toBe(s.messages.a1);
    expect(again.toolCalls.c1).toBe(s.toolCalls.c1);
  });

  it('a partial message picks up an in-flight stream where it is', () => {
    const s = run([
      { type: 'sync', status: 'thinking', run: { id: 'r1' } },
      { type: 'history', messages: [user('u1', 'write a poem')] },
      {
        type: 'partial',
        message: {
          id: 'a1',
          role: 'assistant',
          content: 'Roses are',
          status: 'streaming',
          reasoning: 'rhyme'
        }
      },
      { type: 'text_delta', message_id: 'a1', delta: ' red', seq: 11 }
    ]);
    expect(s.order).toEqual(['u1', 'a1']);
    expect(s.messages.a1).toMatchObject({
      content: 'Roses are red',
      reasoning: 'rhyme',
      status: 'streaming'
    });
    expect(s.streamingId).toBe('a1');
  });

  it('events already in the partial snapshot are not applied twice', () => {
    const s = run([
      { type: 'history', messages: [user('u1', 'q')] },
      {
        type: 'partial',
        message: {
          id: 'a1',
          role: 'assistant',
          content: 'one two',
          status: 'streaming',
          seq: 42
        }
      },
      // A live copy of the last delta in the snapshot, then a new one.
      { type: 'text_delta', message_id: 'a1', delta: ' two', seq: 42 },
      { type: 'text_delta', message_id: 'a1', delta: ' three', seq: 43 }
    ]);
    expect(s.messages.a1.content).toBe('one two three');
  });

  it('stored tool results use the store columns (result_summary, error)', () => {
    const s = run([
      {
        type: 'history',
        messages: [
          {
            id: 'a1',
            role: 'assistant',
            content: '',
            status: 'complete',
            tool_calls: [{ id: 'c1', name: 'bash', input: { command: 'x' } }]
          },
          {
            id: 't1',
            role: 'tool',
            content: '',
            tool_call_id: 'c1',
            status: 'complete',
            result_summary: 'exit 127',
            error: 'command not found'
          }
        ]
      }
    ]);
    expect(s.toolCalls.c1).toMatchObject({
      status: 'error',
      summary: 'exit 127',
      output: 'command not found'
    });
  });

  it('a partial message with a running tool call shows a running card', () => {
    const s = run([
      {
        type: 'partial',
        message: {
          id: 'a1',
          role: 'assistant',
          content: 'Running it.',
          status: 'streaming',
          tool_calls: [
            { id: 'c5', name: 'bash', input: { command: 'sleep 5' } }
          ]
        }
      }
    ]);
    expect(s.toolCalls.c5).toMatchObject({ status: 'running', name: 'bash' });
    expect(s.messages.a1.toolCallIds).toEqual(['c5']);
  });

  it('a reconnect shows a tool that still runs, with its output so far', () => {
    // The step is stored (complete) with its call; the result is not: the server's
    // snapshot says the call runs, so the card is not "stopped", and live output resumes.
    const s = run([
      { type: 'sync', status: 'executing', detail: 'bash', run: { id: 'r1' } },
      {
        type: 'history',
        messages: [
          user('u1', 'q'),
          {
            id: 'a1',
            role: 'assistant',
            content: '',
            status: 'complete',
            tool_calls: [{ id: 'c1', name: 'bash', input: { command: 'x' } }]
          }
        ]
      },
      {
        type: 'partial',
        message: null,
        tools: [{ id: 'c1', name: 'bash', progress: 'line 1\n' }],
        upto: 30
      },
      {
        type: 'tool_progress',
        call_id: 'c1',
        stream: 'stdout',
        text: 'line 1\n',
        seq: 30
      },
      {
        type: 'tool_progress',
        call_id: 'c1',
        stream: 'stdout',
        text: 'line 2\n',
        seq: 31
      }
    ]);
    expect(s.status).toBe('executing');
    expect(s.statusDetail).toBe('bash');
    expect(s.toolCalls.c1).toMatchObject({
      status: 'running',
      progress: 'line 1\nline 2\n'
    });
  });

  it('a snapshot tool whose result is in the history stays finished', () => {
    const s = run([
      {
        type: 'history',
        messages: [
          {
            id: 'a1',
            role: 'assistant',
            content: '',
            status: 'complete',
            tool_calls: [{ id: 'c1', name: 'bash', input: { command: 'x' } }]
          },
          { id: 't1', role: 'tool', content: 'ok', tool_call_id: 'c1' }
        ]
      },
      { type: 'partial', tools: [{ id: 'c1', name: 'bash', progress: 'o' }] }
    ]);
    expect(s.toolCalls.c1.status).toBe('complete');
  });

  it('sync gives the status detail (what an approval waits for)', () => {
    const s = run([
      {
        type: 'sync',
        status: 'waiting',
        detail: 'approval needed: write a.py',
        run: { id: 'r1' }
      }
    ]);
    expect(s.status).toBe('waiting');
    expect(s.statusDetail).toBe('approval needed: write a.py');
  });

  it('history of a stored streaming message keeps it streaming', () => {
    const s = run([
      {
        type: 'history',
        messages: [
          user('u1', 'q'),
          { id: 'a1', role: 'assistant', content: 'par', status: 'streaming' }
        ]
      }
    ]);
    expect(s.streamingId).toBe('a1');
  });

  it('a stored call without a result in a finished message is cancelled', () => {
    const s = run([
      {
        type: 'history',
        messages: [
          {
            id: 'a1',
            role: 'assistant',
            content: '',
            status: 'cancelled',
            tool_calls: [{ id: 'c1', name: 'bash', input: {} }]
          }
        ]
      }
    ]);
    expect(s.toolCalls.c1.status).toBe('cancelled');
  });

  it('prepend adds an older page before the loaded messages', () => {
    const s = run([
      { type: 'history', messages: [user('u3', 'three')], next_cursor: 'c3' },
      {
        type: 'local/prepend',
        messages: [user('u1', 'one'), user('u2', 'two'), user('u3', 'three')],
        nextCursor: null
      }
    ]);
    expect(texts(s)).toEqual(['one', 'two', 'three']);
    expect(s.nextCursor).toBeNull();
  });
});

describe('runs as durable tasks (the server ends a run with task_*)', () => {
  const started: ChatAction[] = [
    { type: 'task_queued', task_id: 'r1', run_id: 'r1', attempt: 0 },
    { type: 'status', status: 'thinking', run_id: 'r1' },
    {
      type: 'text_delta',
      message_id: 'a1',
      delta: 'word0 word1',
      run_id: 'r1'
    },
    { type: 'tool_call', id: 'c1', name: 'bash', input: {}, message_id: 'a1' }
  ];

  it('task_failed "cancelled" marks the reply cancelled and the chat idle', () => {
    const s = run([
      ...started,
      { type: 'task_failed', task_id: 'r1', run_id: 'r1', detail: 'cancelled' }
    ]);
    expect(s.messages.a1.status).toBe('cancelled');
    expect(s.toolCalls.c1.status).toBe('cancelled');
    expect(s.status).toBe('idle');
    expect(isRunning(s)).toBe(false);
    expect(s.error).toBeNull();
  });

  it('task_failed for another reason shows the error', () => {
    const s = run([
      ...started,
      { type: 'task_failed', task_id: 'r1', run_id: 'r1', detail: 'model 500' }
    ]);
    expect(s.messages.a1.status).toBe('error');
    expect(s.error?.message).toBe('model 500');
    expect(isRunning(s)).toBe(false);
  });

  it('task_failed keeps the code of the error frame before it', () => {
    const s = run([
      ...started,
      { type: 'error', message: 'key refused', code: 'auth' },
      {
        type: 'task_failed',
        task_id: 'r1',
        run_id: 'r1',
        detail: 'key refused'
      }
    ]);
    expect(s.error).toEqual({
      message: 'key refused',
      code: 'auth',
      retryable: true
    });
    expect(s.messages.a1.errorCode).toBe('auth');
  });

  it('task_complete ends the run', () => {
    const s = run([
      ...started,
      { type: 'task_complete', task_id: 'r1', run_id: 'r1' }
    ]);
    expect(s.messages.a1.status).toBe('complete');
    expect(s.status).toBe('idle');
  });

  it('task_retrying shows a waiting status with the attempt', () => {
    const s = run([
      ...started,
      {
        type: 'task_retrying',
        task_id: 'r1',
        run_id: 'r1',
        detail: 'in 2 s',
        attempt: 1
      }
    ]);
    expect(s.status).toBe('waiting');
    expect(s.statusDetail).toContain('attempt 1');
  });

  it('a task that is not the run (a subtask) does not end it', () => {
    const s = run([
      ...started,
      { type: 'task_complete', task_id: 't-sub', run_id: 'r1' }
    ]);
    expect(s.messages.a1.status).toBe('streaming');
    expect(s.tasks['t-sub'].status).toBe('complete');
  });

  it('sync "running" counts as running', () => {
    const s = run([{ type: 'sync', status: 'running', run: { id: 'r1' } }]);
    expect(isRunning(s)).toBe(true);
  });
});

describe('idempotence', () => {
  it('events at or below the last seq are ignored', () => {
    const frames: ChatAction[] = [
      { type: 'text_delta', message_id: 'a1', delta: 'A', seq: 1 },
      { type: 'text_delta', message_id: 'a1', delta: 'B', seq: 2 },
      {
        type: 'tool_progress',
        call_id: 'c1',
        stream: 'stdout',
        text: 'x',
        seq: 3
      }
    ];
    const s = run(frames);
    expect(s.lastSeq).toBe(3);
    const again = run(frames, s);
    expect(again).toBe(s);
    expect(again.messages.a1.content).toBe('AB');
  });

  it('a reconnect replaying old events then new ones applies only the new', () => {
    const s = run([
      { type: 'text_delta', message_id: 'a1', delta: 'one ', seq: 5 },
      { type: 'local/connected', connected: false },
      { type: 'text_delta', message_id: 'a1', delta: 'one ', seq: 5 },
      { type: 'text_delta', message_id: 'a1', delta: 'two', seq: 6 }
    ]);
    expect(s.messages.a1.content).toBe('one two');
    expect(s.connected).toBe(false);
  });

  it('duplicate tool_result and chat frames without seq change nothing visible', () => {
    const result: ChatAction = {
      type: 'tool_result',
      call_id: 'c1',
      name: 'bash',
      output: 'ok',
      duration_ms: 2,
      ok: true
    };
    const s1 = run([
      {
        type: 'tool_call',
        id: 'c1',
        name: 'bash',
        input: {},
        message_id: 'a1'
      },
      result,
      { type: 'chat', message_id: 'a1', content: 'Done.' }
    ]);
    const s2 = run(
      [result, { type: 'chat', message_id: 'a1', content: 'Done.' }],
      s1
    );
    expect(s2.order).toEqual(s1.order);
    expect(s2.toolCalls).toEqual(s1.toolCalls);
    expect(s2.messages).toEqual(s1.messages);
  });

  it('the same message frame twice is a no-op', () => {
    const m: ChatAction = { type: 'message', message: user('u1', 'hi') };
    const s = run([m]);
    expect(reduce(s, m)).toBe(s);
  });
});

describe('local actions: send, ack, truncate', () => {
  it('an optimistic user message is replaced by the server copy', () => {
    let s = run([{ type: 'local/user_message', id: 'local-1', content: 'hi' }]);
    expect(s.messages['local-1']).toMatchObject({
      status: 'pending',
      local: true
    });
    s = reduce(s, {
      type: 'local/user_ack',
      localId: 'local-1',
      message: user('u1', 'hi')
    });
    expect(s.order).toEqual(['u1']);
    expect(s.messages.u1.local).toBeUndefined();
  });

  it('the server copy arriving first (another tab / history) wins', () => {
    const s = run([
      { type: 'local/user_message', id: 'local-1', content: 'hi' },
      { type: 'message', message: user('u1', 'hi') },
      { type: 'local/user_ack', localId: 'local-1', message: user('u1', 'hi') }
    ]);
    expect(s.order).toEqual(['u1']);
  });

  it('history keeps optimistic messages the server has not stored yet', () => {
    const s = run([
      { type: 'local/user_message', id: 'local-1', content: 'new' },
      { type: 'history', messages: [user('u0', 'old')] }
    ]);
    expect(texts(s)).toEqual(['old', 'new']);
  });

  it('a sent message counts as running until its run reports a status', () => {
    let s = run([{ type: 'local/user_message', id: 'local-1', content: 'hi' }]);
    expect(isRunning(s)).toBe(true);
    s = reduce(s, {
      type: 'local/user_ack',
      localId: 'local-1',
      message: user('u1', 'hi')
    });
    expect(isRunning(s)).toBe(true);
    s = run(
      [
        { type: 'status', status: 'thinking' },
        { type: 'text_delta', message_id: 'a1', delta: 'x' },
        { type: 'status', status: 'idle' }
      ],
      s
    );
    expect(isRunning(s)).toBe(false);
  });

  it('a run that finished before the send was acknowledged is not running', () => {
    const s = run([
      { type: 'local/user_message', id: 'local-1', content: 'hi' },
      { type: 'status', status: 'thinking' },
      { type: 'chat', message_id: 'a1', content: 'fast' },
      { type: 'status', status: 'idle' },
      { type: 'local/user_ack', localId: 'local-1', message: user('u1', 'hi') }
    ]);
    expect(isRunning(s)).toBe(false);
    expect(texts(s)).toEqual(['hi', 'fast']);
  });

  it('a failed send marks the message with its error', () => {
    const s = run([
      { type: 'local/user_message', id: 'local-1', content: 'hi' },
      { type: 'local/send_failed', localId: 'local-1', error: '503' }
    ]);
    expect(s.messages['local-1']).toMatchObject({
      status: 'error',
      error: '503'
    });
  });

  it('truncate drops a message, everything after it and their cards', () => {
    const s = run([
      {
        type: 'history',
        messages: [
          user('u1', 'one'),
          {
            id: 'a1',
            role: 'assistant',
            content: 'r1',
            status: 'complete',
            tool_calls: [{ id: 'c1', name: 'bash', input: {} }]
          },
          user('u2', 'two'),
          { id: 'a2', role: 'assistant', content: 'r2', status: 'complete' }
        ]
      },
      { type: 'local/truncate', messageId: 'a1' }
    ]);
    expect(s.order).toEqual(['u1']);
    expect(s.toolCalls.c1).toBeUndefined();
  });

  it('a rename updates the open session only', () => {
    const s = run([
      { type: 'local/session', session: { id: 's1', title: 'New' } }
    ]);
    expect(s.session?.title).toBe('New');
    expect(
      reduce(s, { type: 'local/session', session: { id: 's2', title: 'x' } })
    ).toBe(s);
  });

  it('reset starts a new session from scratch', () => {
    const s = run([
      { type: 'text_delta', message_id: 'a1', delta: 'x', seq: 4 },
      { type: 'local/reset', session: { id: 's2', title: 'Other' } }
    ]);
    expect(s.order).toEqual([]);
    expect(s.lastSeq).toBe(0);
    expect(s.session?.id).toBe('s2');
  });
});
