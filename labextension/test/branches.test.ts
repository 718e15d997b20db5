import { describe, expect, it } from 'vitest';

import type { ThinkApi } from '../src/api';
import {
  BranchTree,
  type IBranch,
  type ILine,
  siblingsOf
} from '../src/branches';
import {
  conflictPlace,
  type IRewindResult,
  RewindModel,
  rewindSummary
} from '../src/rewind';

function branch(id: string, at: number, current = false): IBranch {
  return {
    id,
    parent_id: null,
    fork_id: null,
    first_id: null,
    last_id: null,
    count: 0,
    current,
    created_at: at
  };
}

function line(b: IBranch, ids: [string, number][]): ILine {
  return { branch: b, messages: ids.map(([id, seq]) => ({ id, seq })) };
}

describe('siblingsOf', () => {
  it('is empty for a conversation that never branched', () => {
    const root = branch('b0', 1, true);
    const got = siblingsOf([
      line(root, [
        ['u1', 1],
        ['a1', 2]
      ])
    ]);
    expect(got.size).toBe(0);
  });

  it('numbers the versions of an edited message, oldest first', () => {
    // u2 was edited twice: u2b and then u2c follow a1 on their own branches.
    const root = branch('b0', 1);
    const b1 = branch('b1', 2);
    const b2 = branch('b2', 3, true);
    const got = siblingsOf([
      line(root, [
        ['u1', 1],
        ['a1', 2],
        ['u2', 3],
        ['a2', 4]
      ]),
      line(b1, [
        ['u1', 1],
        ['a1', 2],
        ['u2b', 5],
        ['a2b', 6]
      ]),
      line(b2, [
        ['u1', 1],
        ['a1', 2],
        ['u2c', 7]
      ])
    ]);
    expect(got.get('u2c')).toEqual({
      index: 2,
      ids: ['u2', 'u2b', 'u2c'],
      branches: ['b0', 'b1', 'b2']
    });
    expect(got.get('u2')?.index).toBe(0);
    // Shared messages and answers have no versions of their own.
    expect(got.has('u1')).toBe(false);
    expect(got.has('a1')).toBe(false);
    expect(got.has('a2b')).toBe(false);
  });

  it('shows a message held by several lines through the current branch', () => {
    // b2 left b1 later on, so u2b is on both lines: b1 is current and shows it.
    const root = branch('b0', 1);
    const b1 = branch('b1', 2, true);
    const b2 = branch('b2', 3);
    const got = siblingsOf([
      line(root, [
        ['u1', 1],
        ['u2', 2]
      ]),
      line(b1, [
        ['u1', 1],
        ['u2b', 3],
        ['u3', 4]
      ]),
      line(b2, [
        ['u1', 1],
        ['u2b', 3],
        ['u3b', 5]
      ])
    ]);
    expect(got.get('u2b')?.branches).toEqual(['b0', 'b1']);
    expect(got.get('u3b')?.branches).toEqual(['b1', 'b2']);
  });

  it('gives versions to an edited first message', () => {
    const got = siblingsOf([
      line(branch('b0', 1), [['u1', 1]]),
      line(branch('b1', 2, true), [['u1b', 2]])
    ]);
    expect(got.get('u1b')).toEqual({
      index: 1,
      ids: ['u1', 'u1b'],
      branches: ['b0', 'b1']
    });
  });
});

describe('conflictPlace', () => {
  it('names the file, the cell and the lines', () => {
    expect(
      conflictPlace({
        path: 'analysis.ipynb',
        cell: 'c1',
        lines: [
          [2, 2],
          [4, 6]
        ]
      })
    ).toBe('analysis.ipynb, cell c1, line 2, lines 4–6');
    expect(conflictPlace({ path: 'notes.txt' })).toBe('notes.txt');
  });
});

describe('BranchTree', () => {
  function fakeApi(branches: IBranch[], lines: Record<string, string[]>) {
    const reads: string[] = [];
    const api = {
      listBranches: async () => branches,
      listMessages: async (
        _id: string,
        _before: unknown,
        _limit: number,
        _facet: unknown,
        branch: string
      ) => {
        reads.push(branch);
        return {
          messages: lines[branch].map(id => ({
            id,
            seq: Number(id.replace(/\D/g, ''))
          })),
          next_cursor: null
        };
      }
    };
    return { api: api as unknown as ThinkApi, reads };
  }

  it('reads the lines again only when the branches change', async () => {
    const branches = [branch('b0', 1), { ...branch('b1', 2, true) }];
    const lines: Record<string, string[]> = {
      b0: ['m1', 'm2'],
      b1: ['m1', 'm3']
    };
    const { api, reads } = fakeApi(branches, lines);
    const tree = new BranchTree(api);
    await tree.refresh('s1');
    expect(tree.siblings.get('m3')?.index).toBe(1);
    expect(reads).toEqual(['b0', 'b1']);
    lines.b1.push('m4'); // a message added to the current line
    await tree.refresh('s1');
    expect(reads).toEqual(['b0', 'b1']);
    // A conversation rewind before m4 and a message sent: a new branch with its first.
    branches[1].current = false;
    branches.push({ ...branch('b2', 3, true), first_id: 'm5' });
    lines.b2 = ['m1', 'm3', 'm5'];
    await tree.refresh('s1');
    expect(reads.length).toBe(5);
    expect(tree.siblings.get('m5')).toEqual({
      index: 1,
      ids: ['m4', 'm5'],
      branches: ['b1', 'b2']
    });
  });
});

describe('switching versions with the files', () => {
  const result: IRewindResult = {
    restored: ['notes.txt'],
    deleted: ['made.txt'],
    conflicts: [{ path: 'plan.txt', lines: [[2, 2]] }],
    rewind_id: 'r1'
  };

  it('says what the switch restored and removed', () => {
    expect(rewindSummary('switch', result)).toBe(
      'Switched the conversation and files to this version: restored notes.txt; removed made.txt.'
    );
    expect(
      rewindSummary('switch', { restored: [], deleted: [], conflicts: [] })
    ).toBe(
      'Switched the conversation and files to this version: no file needed changing.'
    );
    // Only conflicts: nothing changed, the rest is the note's list.
    expect(
      rewindSummary('switch', { ...result, restored: [], deleted: [] })
    ).toMatch(/kept as people changed it\.$/);
  });

  it('asks the server for the files and shows its answer in the note', async () => {
    const calls: unknown[][] = [];
    const api = {
      switchBranch: async (...args: unknown[]) => {
        calls.push(args);
        return args[2] ? result : null;
      },
      listBranches: async () => []
    } as unknown as ThinkApi;
    const tree = new BranchTree(api);
    await tree.refresh('s1');
    const siblings = { index: 1, ids: ['u2', 'u2b'], branches: ['b0', 'b1'] };
    expect(await tree.show(siblings, 0)).toBeNull();
    let reloads = 0;
    const model = new RewindModel({
      sessionId: 's1',
      running: () => false,
      rewind: async () => result,
      reload: async () => {
        reloads++;
      }
    });
    await model.switchWithFiles(() => tree.show(siblings, 0, true));
    expect(calls).toEqual([
      ['s1', 'b0', false],
      ['s1', 'b0', true]
    ]);
    expect(model.state).toEqual({ phase: 'done', what: 'switch', result });
    // The conversation changed on the server: the chat reads it again.
    expect(reloads).toBe(1);
  });

  it('reports a failed switch', async () => {
    const model = new RewindModel({
      sessionId: 's1',
      running: () => false,
      rewind: async () => result,
      reload: async () => undefined
    });
    await model.switchWithFiles(async () => {
      throw new Error('a run is in progress or queued; cancel it first');
    });
    expect(model.state).toEqual({
      phase: 'failed',
      what: 'switch',
      error: 'a run is in progress or queued; cancel it first'
    });
  });
});
