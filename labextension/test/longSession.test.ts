import { describe, expect, it } from 'vitest';

import {
  addPending,
  attachmentLabel,
  MAX_ATTACHMENTS,
  pendingFromCells,
  pendingFromFile
} from '../src/attachments';
import {
  displayItems,
  formatCost,
  formatTokens,
  sessionLine,
  usageLine
} from '../src/longSession';
import { ChatAction, initialState, reduceAll } from '../src/reducer';
import type { IWireMessage } from '../src/tokens';

const S = { id: 's1', title: 'Chat' };

const wire = (id: string, role: string, extra: object = {}): IWireMessage =>
  ({
    id,
    role,
    content: `${role} ${id}`,
    status: 'complete',
    ...extra
  }) as IWireMessage;

describe('usage', () => {
  it('a usage frame shows on its message and adds to the session totals', () => {
    const s = reduceAll(initialState(S), [
      { type: 'text_delta', message_id: 'a1', delta: 'Hi' },
      {
        type: 'usage',
        message_id: 'a1',
        role: 'primary',
        model: 'gpt-4o-mini',
        purpose: 'step',
        tokens_in: 1200,
        tokens_out: 30,
        tokens_cached: 1024,
        cost: 0.0002
      },
      {
        type: 'usage',
        message_id: 'a1',
        role: 'fast',
        model: 'mini',
        purpose: 'tool_summary',
        tokens_in: 500,
        tokens_out: 50,
        cost: null,
        estimated: true
      }
    ]);
    expect(s.messages.a1.usage).toMatchObject({
      role: 'primary',
      model: 'gpt-4o-mini',
      tokensIn: 1200,
      tokensCached: 1024
    });
    expect(s.usage).toEqual({
      calls: 2,
      tokensIn: 1700,
      tokensOut: 80,
      cost: 0.0002,
      costComplete: false,
      estimated: 1
    });
    expect(usageLine(s.messages.a1.usage!)).toBe(
      'primary · gpt-4o-mini · 1.2k in · 30 out · 1.0k cached · $0.0002'
    );
    expect(sessionLine(s.usage)).toBe('~1.8k tokens · ≥ $0.0002');
  });

  it('a replayed usage frame (same seq) is not counted twice', () => {
    const frame: ChatAction = {
      type: 'usage',
      seq: 5,
      message_id: 'x',
      role: 'primary',
      model: 'm',
      tokens_in: 10,
      tokens_out: 1
    };
    const s = reduceAll(initialState(S), [frame, frame]);
    expect(s.usage.calls).toBe(1);
  });

  it('history carries the role, model and tokens of each reply', () => {
    const s = reduceAll(initialState(S), [
      {
        type: 'history',
        messages: [
          wire('u1', 'user'),
          wire('a1', 'assistant', {
            model: 'eyes',
            model_role: 'vision',
            tokens_in: 900,
            tokens_out: 12,
            cost: null
          })
        ]
      },
      { type: 'local/usage', usage: { ...initialState().usage, calls: 3 } }
    ]);
    expect(s.messages.a1.usage).toMatchObject({
      role: 'vision',
      model: 'eyes'
    });
    expect(s.usage.calls).toBe(3);
  });

  it('formats tokens and costs', () => {
    expect(formatTokens(999)).toBe('999');
    expect(formatTokens(12_345)).toBe('12k');
    expect(formatTokens(2_500_000)).toBe('2.5M');
    expect(formatCost(null)).toBe('—');
    expect(formatCost(1.234)).toBe('$1.23');
    expect(formatCost(0.5)).toBe('$0.500');
  });
});

describe('compaction', () => {
  const history = [
    wire('u0', 'user'),
    wire('a0', 'assistant'),
    wire('u1', 'user'),
    wire('a1', 'assistant'),
    wire('u2', 'user'),
    wire('a2', 'assistant'),
    wire('sum1', 'summary', {
      content: 'SUMMARY one',
      compaction: { first_id: 'a0', tail_id: 'u2', to_seq: 4, count: 3 }
    })
  ];

  it('a stored summary becomes a marker over the messages it covers', () => {
    const s = reduceAll(initialState(S), [
      { type: 'history', messages: history }
    ]);
    expect(s.order).toEqual(['u0', 'a0', 'u1', 'a1', 'u2', 'a2']);
    expect(s.compactions.sum1.summary).toBe('SUMMARY one');
    const items = displayItems(s.order, s.messages, s.compactions, true);
    expect(items.map(i => (i.kind === 'message' ? i.id : 'marker'))).toEqual([
      'u0',
      'marker',
      'u2',
      'a2'
    ]);
    const marker = items[1];
    expect(marker.kind === 'compaction' && marker.hidden).toEqual([
      'a0',
      'u1',
      'a1'
    ]);
  });

  it('a live compaction frame folds streamed messages; the latest one wins', () => {
    let s = reduceAll(initialState(S), [
      { type: 'history', messages: history }
    ]);
    s = reduceAll(s, [
      { type: 'text_delta', message_id: 'a3', delta: 'more' },
      {
        type: 'compaction',
        message_id: 'sum2',
        summary: 'SUMMARY two',
        count: 5,
        first_id: 'a0',
        tail_id: 'a3',
        to_seq: 7,
        tokens_before: 3000,
        tokens_after: 1200
      }
    ]);
    const items = displayItems(s.order, s.messages, s.compactions, true);
    expect(items.map(i => (i.kind === 'message' ? i.id : 'marker'))).toEqual([
      'u0',
      'marker',
      'a3'
    ]);
    const marker = items[1];
    expect(marker.kind === 'compaction' && marker.compaction.id).toBe('sum2');
  });

  it('when the covered messages are on an older page the first request stays', () => {
    const s = reduceAll(initialState(S), [
      {
        type: 'history',
        messages: history.slice(3),
        next_cursor: 4
      }
    ]);
    const items = displayItems(s.order, s.messages, s.compactions, false);
    expect(items[0].kind).toBe('compaction');
    const atStart = displayItems(
      ['u0', 'x1', 'u2'],
      {
        u0: { ...s.messages.u2, id: 'u0' },
        x1: { ...s.messages.u2, id: 'x1', role: 'assistant' },
        u2: s.messages.u2
      },
      { c: { ...s.compactions.sum1, firstId: 'gone' } },
      true
    );
    expect(atStart.map(i => (i.kind === 'message' ? i.id : 'marker'))).toEqual([
      'u0',
      'marker',
      'u2'
    ]);
  });
});

describe('whole tool outputs', () => {
  it('the card knows its stored message and the whole size', () => {
    const s = reduceAll(initialState(S), [
      {
        type: 'tool_call',
        id: 'c1',
        name: 'bash',
        input: {},
        message_id: 'a1'
      },
      {
        type: 'tool_result',
        call_id: 'c1',
        name: 'bash',
        output: '[The whole output is 90,000 characters...]',
        duration_ms: 5,
        ok: true,
        result_id: 'm_tool',
        full_size: 90000
      }
    ]);
    expect(s.toolCalls.c1).toMatchObject({
      resultId: 'm_tool',
      fullSize: 90000
    });
    const fromHistory = reduceAll(initialState(S), [
      {
        type: 'history',
        messages: [
          wire('a1', 'assistant', {
            tool_calls: [{ id: 'c1', name: 'bash', arguments: '{}' }]
          }),
          wire('t1', 'tool', { tool_call_id: 'c1', output_size: 90000 })
        ]
      }
    ]);
    expect(fromHistory.toolCalls.c1).toMatchObject({
      resultId: 't1',
      fullSize: 90000
    });
  });
});

describe('attachments', () => {
  it('classifies pasted files and refuses what cannot be sent', () => {
    const png = pendingFromFile(
      Object.assign(new Blob(['x'], { type: 'image/png' }), { name: 'a.png' })
    );
    expect(png).toMatchObject({ kind: 'image', name: 'a.png', size: 1 });
    expect(png.error).toBeUndefined();
    const pasted = pendingFromFile(new Blob(['x'], { type: 'image/png' }));
    expect(pasted.name).toBe('pasted-image.png');
    const big = pendingFromFile(
      new Blob([new Uint8Array(6 * 1024 * 1024)], { type: 'image/jpeg' })
    );
    expect(big.error).toMatch(/over 5 MB/);
    const tiff = pendingFromFile(new Blob(['x'], { type: 'image/tiff' }));
    expect(tiff.error).toMatch(/only PNG/);
    const text = pendingFromFile(
      Object.assign(new Blob(['a,b\n1,2\n'], { type: 'text/csv' }), {
        name: 'd.csv'
      })
    );
    expect(text).toMatchObject({ kind: 'file', name: 'd.csv' });
  });

  it('turns dragged notebook cells into one attachment', () => {
    const att = pendingFromCells(
      [
        { id: 'c1', cell_type: 'code', source: ['import pandas\n', 'df = 1'] },
        { id: 'c2', cell_type: 'markdown', source: '# Title' },
        'junk'
      ],
      'work/analysis.ipynb'
    );
    expect(att?.name).toBe('2 cells of analysis.ipynb');
    expect(att?.cells).toEqual({
      kind: 'cells',
      path: 'work/analysis.ipynb',
      cells: [
        { id: 'c1', cell_type: 'code', source: 'import pandas\ndf = 1' },
        { id: 'c2', cell_type: 'markdown', source: '# Title' }
      ]
    });
    expect(attachmentLabel(att!.cells!)).toBe('2 cells of analysis.ipynb');
    expect(pendingFromCells([], null)).toBeNull();
    expect(pendingFromCells('nope', null)).toBeNull();
  });

  it('keeps at most ten', () => {
    const one = pendingFromFile(new Blob(['x'], { type: 'text/plain' }));
    const many = addPending([], Array(12).fill(one));
    expect(many).toHaveLength(MAX_ATTACHMENTS);
  });
});
