import { describe, expect, it } from 'vitest';

import { describeDecision } from '../src/approvalCards';
import { applyApprovalFrame, approvalFromRow } from '../src/approvals';

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

  it('keeps only the last few decided cards', () => {
    let list = applyApprovalFrame([], { ...asked, id: 'p' });
    for (let i = 0; i < 5; i++) {
      list = applyApprovalFrame(list, { ...asked, id: `d${i}` });
      list = applyApprovalFrame(list, {
        type: 'approval_resolved',
        id: `d${i}`,
        decision: 'approve'
      });
    }
    expect(list.map(a => a.id)).toEqual(['p', 'd2', 'd3', 'd4']);
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
