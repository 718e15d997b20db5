// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';

import { describeDecision } from '../src/approvalCards';
import {
  applyApprovalFrame,
  approvalFromRow,
  decidedFor,
  markOwn,
  pendingApprovals
} from '../src/approvals';

const asked = {
  type: 'approval_requested',
  id: 'ap_1',
  tool: 'write_file',
  input: { path: 'a.py', content: 'x = 2\n' },
  summary: 'overwrite a.py',
  diff: '--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n',
  reason: 'strict mode'
};

describe('approvals', () => {
  it('adds a request once, even when a resumed run asks again', () => {
    let list = applyApprovalFrame([], asked);
    list = applyApprovalFrame(list, asked);
    expect(list).toHaveLength(1);
    expect(list[0].status).toBe('pending');
    expect(list[0].diff).toContain('+x = 2');
  });

  it('settles on the first resolution and ignores later ones', () => {
    let list = applyApprovalFrame([], asked);
    list = applyApprovalFrame(list, {
      type: 'approval_resolved',
      id: 'ap_1',
      decision: 'reject',
      user: 'ada',
      source: 'notebook',
      reason: 'not now'
    });
    const again = applyApprovalFrame(list, {
      type: 'approval_resolved',
      id: 'ap_1',
      decision: 'approve',
      source: 'api'
    });
    expect(again).toBe(list);
    expect(list[0].status).toBe('rejected');
    expect(describeDecision(list[0])).toBe(
      'Rejected by ada via notebook: not now'
    );
  });

  it('pins only pending cards; a decided one belongs to its tool call', () => {
    let list = applyApprovalFrame([], { ...asked, id: 'p', call_id: 'c_p' });
    for (let i = 0; i < 5; i++) {
      list = applyApprovalFrame(list, {
        ...asked,
        id: `d${i}`,
        call_id: `c${i}`
      });
      list = applyApprovalFrame(list, {
        type: 'approval_resolved',
        id: `d${i}`,
        decision: i === 4 ? 'reject' : 'approve'
      });
    }
    expect(pendingApprovals(list).map(a => a.id)).toEqual(['p']);
    expect(decidedFor(list, 'c0')?.status).toBe('approved');
    expect(decidedFor(list, 'c4')?.status).toBe('rejected');
    expect(decidedFor(list, 'c_p')).toBeNull();
  });

  it('reads a decided stored row with its call and decision', () => {
    const a = approvalFromRow({
      id: 'ap_3',
      tool: 'bash',
      input: { command: 'rm x' },
      call_id: 'call_9',
      status: 'rejected',
      decision: JSON.stringify({
        decision: 'reject',
        user: 'ada',
        source: 'sidebar',
        reason: 'no'
      })
    });
    expect(a.callId).toBe('call_9');
    expect(a.status).toBe('rejected');
    expect(describeDecision(a)).toBe('Rejected by ada via sidebar: no');
  });

  it('approved with edited arguments: the card shows what ran', () => {
    let list = applyApprovalFrame([], { ...asked, call_id: 'c1' });
    list = applyApprovalFrame(list, {
      type: 'approval_resolved',
      id: 'ap_1',
      decision: 'approve',
      input: { path: 'b.py', content: 'x = 3\n' },
      user: 'Ada Lovelace',
      source: 'sidebar'
    });
    expect(list[0].input).toEqual({ path: 'b.py', content: 'x = 3\n' });
    expect(list[0].diff).toBe(''); // the asked change's diff is not what ran
    expect(list[0].summary).toBe('with edited arguments');
    // After a reload, from the stored row and its decision.
    const row = approvalFromRow({
      id: 'ap_1',
      tool: 'write_file',
      input: asked.input,
      call_id: 'c1',
      status: 'approved',
      decision: JSON.stringify({
        decision: 'approve',
        input: { path: 'b.py', content: 'x = 3\n' },
        user: 'Ada Lovelace',
        user_id: 'u1',
        source: 'sidebar'
      })
    });
    expect(row.input).toEqual({ path: 'b.py', content: 'x = 3\n' });
    expect(row.diff).toBe('');
    // A rejection keeps the asked arguments (nothing ran).
    const rejected = applyApprovalFrame(applyApprovalFrame([], asked), {
      type: 'approval_resolved',
      id: 'ap_1',
      decision: 'reject',
      input: {}
    });
    expect(rejected[0].input).toEqual(asked.input);
  });

  it('names the viewer "you", everyone else by display name', () => {
    const row = (user: string, userId?: string) =>
      approvalFromRow({
        id: `ap_${user}`,
        tool: 'bash',
        input: {},
        status: 'approved',
        decision: {
          decision: 'approve',
          user,
          user_id: userId,
          source: 'sidebar'
        }
      });
    const me = { username: 'u1', display_name: 'Ada Lovelace' };
    const list = markOwn(
      [
        row('Ada Lovelace', 'u1'),
        row('Grace Hopper', 'u2'),
        row('Ada Lovelace')
      ],
      me
    );
    expect(list.map(a => describeDecision(a))).toEqual([
      'Approved by you via sidebar',
      'Approved by Grace Hopper via sidebar',
      'Approved by you via sidebar'
    ]);
    expect(markOwn(list, me)).toBe(list);
  });

  it('reads a stored row (a reloaded page)', () => {
    const a = approvalFromRow({
      id: 'ap_2',
      tool: 'bash',
      input: { command: 'rm x' },
      summary: 'bash: rm x',
      diff: null,
      status: 'pending'
    });
    expect(a).toMatchObject({
      id: 'ap_2',
      tool: 'bash',
      diff: '',
      status: 'pending'
    });
  });
});
