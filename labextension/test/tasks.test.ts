import { describe, expect, it } from 'vitest';

import {
  applySubagentFrame,
  historyRequested,
  MAX_STREAM_CHARS,
  Streams,
  withHistory
} from '../src/subagentStream';
import {
  childrenOf,
  EMPTY_GRAPH,
  ITaskGraph,
  mergeTree,
  overall,
  shownRoots,
  upsertTask,
  waitingFor
} from '../src/taskGraph';
import type { ITask, IWireMessage } from '../src/tokens';
import type { SubagentFrame } from '../src/wire';
import { later, settle, setup, task } from './taskFixtures';

function graphOf(...tasks: ITask[]): ITaskGraph {
  return tasks.reduce(upsertTask, EMPTY_GRAPH);
}

describe('task graph', () => {
  it('builds the tree from task_created frames, in creation order', () => {
    const root = task('r', { status: 'in_progress' });
    const a = task('a', { parent_id: 'r', type: 'explore' });
    const b = task('b', { parent_id: 'r', dependencies: ['a'] });
    const a1 = task('a1', { parent_id: 'a', depth: 2 });
    const g = graphOf(root, a, b, a1);
    expect(childrenOf(g, null)).toEqual(['r']);
    expect(childrenOf(g, 'r')).toEqual(['a', 'b']);
    expect(childrenOf(g, 'a')).toEqual(['a1']);
    expect(shownRoots(g)).toEqual(['r']);
  });

  it('does not list a request the model did not decompose', () => {
    const lone = task('lone', { status: 'complete', progress: 1 });
    expect(shownRoots(graphOf(lone))).toEqual([]);
    const delegated = task('d', {
      subagent: { status: 'running', model: 'fast' }
    });
    expect(shownRoots(graphOf(lone, delegated))).toEqual(['d']);
  });

  it('keeps the newest copy when task_updated frames come out of order', () => {
    const created = task('a', { parent_id: null });
    const first = { ...created, status: 'in_progress' as const };
    const newer = {
      ...created,
      status: 'complete' as const,
      progress: 1,
      updated_at: later()
    };
    let g = graphOf(created);
    g = upsertTask(g, newer);
    g = upsertTask(g, first); // older than what is shown: ignored
    expect(g.tasks.a.status).toBe('complete');
    expect(g.tasks.a.progress).toBe(1);
    // The same copy again changes nothing, not even identities.
    expect(upsertTask(g, newer)).toBe(g);
  });

  it('takes a task_updated whose task_created it never saw, in creation order', () => {
    const r = task('r');
    const early = task('early', { parent_id: 'r' });
    const late = task('late', { parent_id: 'r' });
    let g = graphOf(r, late);
    g = upsertTask(g, { ...early, status: 'in_progress' });
    expect(childrenOf(g, 'r')).toEqual(['early', 'late']);
    expect(g.tasks.early.status).toBe('in_progress');
  });

  it('merges a GET snapshot without undoing newer live changes', () => {
    const r = task('r', { status: 'in_progress' });
    const a = task('a', { parent_id: 'r' });
    const snapshot = {
      tasks: [{ ...r, children: [{ ...a, children: [] }] }],
      progress: 0
    };
    const live = graphOf({
      ...a,
      status: 'complete',
      progress: 1,
      updated_at: later()
    });
    const g = mergeTree(live, snapshot);
    expect(g.tasks.a.status).toBe('complete');
    expect(g.tasks.r.status).toBe('in_progress');
    expect(childrenOf(g, 'r')).toEqual(['a']);
    expect(childrenOf(g, null)).toEqual(['r']);
  });

  it('shrugs off malformed tasks', () => {
    const bad = [
      null,
      {},
      { id: 'x', progress: 'lots', dependencies: 'a', subagent: 'yes' }
    ] as unknown as ITask[];
    const g = bad.reduce(upsertTask, EMPTY_GRAPH);
    expect(g.order).toEqual(['x']);
    expect(g.tasks.x.progress).toBe(0);
    expect(g.tasks.x.dependencies).toEqual([]);
    expect(g.tasks.x.subagent).toBeNull();
    expect(mergeTree(g, { tasks: 'no' } as never)).toBe(g);
  });

  it('says what a blocked task waits for and sums up the request in flight', () => {
    const old = task('old', { status: 'complete', progress: 1 });
    const oldKid = task('oldkid', {
      parent_id: 'old',
      status: 'complete',
      progress: 1
    });
    const r = task('r', { status: 'in_progress', progress: 1 / 3 });
    const a = task('a', { parent_id: 'r', status: 'complete', progress: 1 });
    const b = task('b', { parent_id: 'r', status: 'in_progress' });
    const c = task('c', {
      parent_id: 'r',
      status: 'blocked',
      dependencies: ['a', 'b']
    });
    const g = graphOf(old, oldKid, r, a, b, c);
    expect(waitingFor(g, 'c')).toEqual(['B']);
    // Only the request in flight counts while one is in flight.
    expect(overall(g)).toEqual({
      progress: 1 / 3,
      done: 1,
      total: 3,
      active: 1
    });
    const done = upsertTask(g, {
      ...g.tasks.r,
      status: 'complete',
      progress: 1,
      updated_at: later()
    });
    expect(overall(done).progress).toBe(1);
    expect(overall(done).total).toBe(4);
  });
});

function feed(frames: SubagentFrame[], start: Streams = {}): Streams {
  return frames.reduce(applySubagentFrame, start);
}

describe('subagent streams', () => {
  it('accumulate text and tool cards into steps', () => {
    const s = feed([
      { type: 'subagent_spawned', task_id: 't', title: 'Load', model: 'fast' },
      { type: 'subagent_text_delta', task_id: 't', delta: 'Reading ' },
      { type: 'subagent_text_delta', task_id: 't', delta: 'the file.' },
      {
        type: 'subagent_tool_call',
        task_id: 't',
        id: 'c1',
        name: 'read_file',
        input: { path: 'a.csv' }
      },
      {
        type: 'subagent_tool_result',
        task_id: 't',
        call_id: 'c1',
        name: 'read_file',
        output: 'x,y',
        ok: true,
        duration_ms: 3
      },
      { type: 'subagent_text_delta', task_id: 't', delta: 'It has 2 columns.' }
    ]).t;
    expect(s.whole).toBe(true);
    expect(s.model).toBe('fast');
    expect(s.order.length).toBe(2);
    const [first, second] = s.order.map(id => s.messages[id]);
    expect(first).toMatchObject({
      content: 'Reading the file.',
      status: 'complete',
      toolCallIds: ['c1']
    });
    expect(second).toMatchObject({
      content: 'It has 2 columns.',
      status: 'streaming'
    });
    expect(s.toolCalls.c1).toMatchObject({
      status: 'complete',
      output: 'x,y',
      durationMs: 3,
      messageId: first.id
    });
  });

  it('end with a result or a reason, and settle what was running', () => {
    const start = feed([
      { type: 'subagent_spawned', task_id: 't', title: 'T', model: 'm' },
      {
        type: 'subagent_tool_call',
        task_id: 't',
        id: 'c1',
        name: 'bash',
        input: {}
      }
    ]);
    const done = feed(
      [{ type: 'subagent_complete', task_id: 't', result: 'ok' }],
      start
    ).t;
    expect(done.status).toBe('complete');
    expect(done.result).toBe('ok');
    expect(done.toolCalls.c1.status).toBe('cancelled');
    const timedOut = feed(
      [
        {
          type: 'subagent_error',
          task_id: 't',
          message: 'took too long',
          code: 'timeout'
        }
      ],
      start
    ).t;
    expect(timedOut.status).toBe('timeout');
    expect(timedOut.error).toEqual({
      message: 'took too long',
      code: 'timeout'
    });
    const odd = feed(
      [{ type: 'subagent_error', task_id: 't', message: 'x', code: 'weird' }],
      start
    ).t;
    expect(odd.status).toBe('error');
  });

  it('without its spawn, a stream is not whole (its history must be loaded)', () => {
    const s = feed([
      { type: 'subagent_text_delta', task_id: 't', delta: 'mid-way' }
    ]).t;
    expect(s.whole).toBe(false);
    // A duplicate tool call and frames without a task change nothing.
    const once = feed([
      {
        type: 'subagent_tool_call',
        task_id: 't',
        id: 'c',
        name: 'x',
        input: 1
      }
    ]);
    expect(
      applySubagentFrame(once, {
        type: 'subagent_tool_call',
        task_id: 't',
        id: 'c',
        name: 'x',
        input: 1
      })
    ).toBe(once);
    expect(
      applySubagentFrame(once, {
        type: 'subagent_text_delta',
        task_id: '',
        delta: 'x'
      })
    ).toBe(once);
  });

  it('keep the newest text past the cap', () => {
    const big = 'x'.repeat(MAX_STREAM_CHARS / 2 + 10);
    const frames: SubagentFrame[] = [
      { type: 'subagent_spawned', task_id: 't', title: '', model: '' }
    ];
    for (let i = 0; i < 3; i++) {
      frames.push(
        { type: 'subagent_text_delta', task_id: 't', delta: big },
        {
          type: 'subagent_tool_call',
          task_id: 't',
          id: `c${i}`,
          name: 'x',
          input: {}
        }
      );
    }
    const s = feed(frames).t;
    expect(s.chars).toBeLessThanOrEqual(MAX_STREAM_CHARS);
    expect(s.dropped).toBe(2);
    expect(s.order.length).toBe(1);
    expect(Object.keys(s.toolCalls)).toEqual(['c2']);
  });

  it('after a reload: stored history first, then live steps it does not have', () => {
    let streams = feed([
      { type: 'subagent_text_delta', task_id: 't', delta: 'old live' }
    ]);
    const requested = historyRequested(streams.t);
    streams = feed(
      [
        { type: 'subagent_text_delta', task_id: 't', delta: 'ignored' },
        {
          type: 'subagent_tool_call',
          task_id: 't',
          id: 'c1',
          name: 'read_file',
          input: {}
        },
        {
          type: 'subagent_tool_call',
          task_id: 't',
          id: 'c2',
          name: 'bash',
          input: { command: 'ls' }
        },
        { type: 'subagent_text_delta', task_id: 't', delta: 'fresh words' }
      ],
      { t: requested }
    );
    const wire: IWireMessage[] = [
      { id: 'p', role: 'user', content: 'Load the data', seq: 1 },
      {
        id: 'm1',
        role: 'assistant',
        content: 'old live, ignored',
        tool_calls: [{ id: 'c1', name: 'read_file', input: {} }],
        seq: 2
      },
      {
        id: 'r1',
        role: 'tool',
        tool_call_id: 'c1',
        content: 'a,b',
        name: 'read_file',
        seq: 3
      }
    ];
    const s = withHistory(streams.t, wire, null);
    expect(s.history).toBe('loaded');
    const shown = s.order.map(id => s.messages[id]);
    expect(shown.map(m => m.role)).toEqual([
      'user',
      'assistant',
      'assistant',
      'assistant'
    ]);
    expect(shown[1].content).toBe('old live, ignored');
    // The stored call c1 shows once, with its stored result; c2 came live after it.
    expect(shown[2].toolCallIds).toEqual(['c2']);
    expect(s.toolCalls.c1).toMatchObject({ status: 'complete', output: 'a,b' });
    expect(shown[3].content).toBe('fresh words');
    expect(s.current).toBe(shown[3].id);
  });
});

describe('TasksModel', () => {
  it('loads the tree on connect and follows task frames', async () => {
    const t = setup();
    const r = task('r', { status: 'in_progress' });
    t.tree.tasks = [{ ...r, children: [task('a', { parent_id: 'r' })] }];
    t.frame({ type: 'sync', status: 'idle' });
    t.flush();
    await settle();
    t.flush();
    expect(t.api.listTasks).toHaveBeenCalledWith('s1');
    expect(shownRoots(t.model.getSnapshot().graph)).toEqual(['r']);
    t.frame({
      type: 'task_created',
      task: task('b', { parent_id: 'r' }),
      seq: 5
    });
    t.flush();
    expect(childrenOf(t.model.getSnapshot().graph, 'r')).toEqual(['a', 'b']);
    // A replayed frame (same seq) is ignored.
    t.frame({
      type: 'task_updated',
      task: { ...task('b', { parent_id: 'r' }), title: 'replayed' },
      seq: 5
    });
    t.flush();
    expect(t.model.getSnapshot().graph.tasks.b.title).toBe('B');
  });

  it('four subagents streaming: one notification per frame batch, no chat messages', () => {
    const t = setup();
    t.flush();
    t.notified.mockClear();
    const before = t.store.state;
    for (const id of ['t1', 't2', 't3', 't4']) {
      t.frame({
        type: 'subagent_spawned',
        task_id: id,
        title: id,
        model: 'fast'
      });
    }
    for (let i = 0; i < 50; i++) {
      for (const id of ['t1', 't2', 't3', 't4']) {
        t.frame({ type: 'subagent_text_delta', task_id: id, delta: `${i} ` });
      }
    }
    t.flush();
    expect(t.notified).toHaveBeenCalledTimes(1);
    const streams = t.model.getSnapshot().streams;
    expect(Object.keys(streams).sort()).toEqual(['t1', 't2', 't3', 't4']);
    expect(streams.t3.messages[streams.t3.order[0]].content).toMatch(
      /^0 1 2 .* 49 $/
    );
    // Not one subagent word reached the chat.
    expect(t.store.state.order).toEqual(before.order);
    expect(t.store.state.messages).toBe(before.messages);
  });

  it('drill-in: a followed stream needs no history; another loads its facet', async () => {
    const t = setup();
    t.frame({
      type: 'subagent_spawned',
      task_id: 'live',
      title: 'L',
      model: 'm'
    });
    t.flush();
    t.model.open('live');
    t.flush();
    expect(t.model.getDrill()).toBe('live');
    expect(t.api.listMessages).not.toHaveBeenCalled();
    t.facet['subagent:old'] = [
      { id: 'x1', role: 'assistant', content: 'I looked.', seq: 1 }
    ];
    t.model.open('old');
    await settle();
    t.flush();
    expect(t.api.listMessages).toHaveBeenCalledWith(
      's1',
      null,
      100,
      'subagent:old'
    );
    const old = t.model.getSnapshot().streams.old;
    expect(old.history).toBe('loaded');
    expect(old.messages.x1.content).toBe('I looked.');
    t.model.close();
    t.flush();
    expect(t.model.getDrill()).toBeNull();
  });

  it('drill-in comes back after a reload, from the facet history', async () => {
    const storage = new Map<string, string>();
    const first = setup({ storage });
    first.model.open('t9');
    expect(storage.get('think:subagent:s1')).toBe('t9');
    // A new page: a new store and model over the same tab storage.
    const t = setup({ storage });
    t.tree.tasks = [
      task('t9', { subagent: { status: 'complete', model: 'fast' } })
    ];
    t.facet['subagent:t9'] = [
      { id: 'm', role: 'assistant', content: 'Done: 3 files.', seq: 1 }
    ];
    t.frame({ type: 'sync', status: 'idle' });
    t.flush();
    await settle();
    t.flush();
    await settle();
    t.flush();
    expect(t.model.getDrill()).toBe('t9');
    expect(t.model.getSnapshot().streams.t9.messages.m.content).toBe(
      'Done: 3 files.'
    );
    // Not followed live: the task's word on its subagent holds.
    expect(t.model.getSnapshot().streams.t9.status).toBe('complete');
    expect(t.model.getSnapshot().streams.t9.model).toBe('fast');
  });

  it('a reconnect reloads the tree and the stream shown', async () => {
    const t = setup();
    t.frame({ type: 'sync', status: 'idle' });
    t.frame({ type: 'subagent_spawned', task_id: 'a', title: 'A', model: 'm' });
    t.flush();
    await settle();
    t.model.open('a');
    expect(t.api.listMessages).not.toHaveBeenCalled();
    t.frame({ type: 'sync', status: 'running' });
    t.flush();
    await settle();
    expect(t.api.listTasks).toHaveBeenCalledTimes(2);
    expect(t.api.listMessages).toHaveBeenCalledTimes(1);
    expect(t.model.getSnapshot().streams.a.whole).toBe(false);
  });

  it('forgets the tasks of the session it leaves', async () => {
    const t = setup();
    t.frame({ type: 'task_created', task: task('a'), seq: 1 });
    t.frame({ type: 'subagent_spawned', task_id: 'a', title: 'A', model: 'm' });
    t.flush();
    t.model.open('a');
    t.store.open({ id: 's2', title: 'Other' });
    t.flush();
    const snap = t.model.getSnapshot();
    expect(snap.graph.order).toEqual([]);
    expect(snap.streams).toEqual({});
    expect(snap.drill).toBeNull();
    // Its frames start again from seq 1 without being taken for duplicates.
    t.frame({ type: 'task_created', task: task('b'), seq: 1 });
    t.flush();
    expect(t.model.getSnapshot().graph.order).toEqual(['b']);
  });
});
