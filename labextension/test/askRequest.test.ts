// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';

import {
  askRequest,
  bounded,
  errorOf,
  MAX_TRACEBACK,
  stripAnsi,
  withRules
} from '../src/askRequest';
import { describeAnswer } from '../src/questionCards';
import {
  answeredFor,
  applyQuestionFrame,
  pendingQuestions,
  questionFromRow
} from '../src/questions';

const TRACEBACK = [
  '\u001b[0;31m---------------------------------------------------------------------------\u001b[0m',
  '\u001b[0;31mZeroDivisionError\u001b[0m                         Traceback (most recent call last)',
  '\u001b[0;32m----> 1\u001b[0m mean \u001b[38;5;241m=\u001b[39m total \u001b[38;5;241m/\u001b[39m count',
  '\u001b[0;31mZeroDivisionError\u001b[0m: division by zero'
];

const CELLS = ['a = 1', 'b = 0', 'a / b', 'print(a)', 'x = 3', 'y = 4'].map(
  (source, index) => ({ id: `c${index}`, index, cell_type: 'code', source })
);

describe('Ask Think', () => {
  it('strips colours and hyperlinks from tracebacks', () => {
    expect(stripAnsi(TRACEBACK[2])).toBe('----> 1 mean = total / count');
    expect(stripAnsi('\u001b]8;;file:///a.py\u0007a.py\u001b]8;;\u0007')).toBe(
      'a.py'
    );
  });

  it('bounds text to its head and tail, saying how much was cut', () => {
    const long = 'a'.repeat(5000) + 'END';
    const b = bounded(long, 1000);
    expect(b.length).toBeLessThan(1100);
    expect(b.startsWith('aaa')).toBe(true);
    expect(b.endsWith('END')).toBe(true);
    expect(b).toContain('(4003 characters cut)');
    expect(bounded('short', 1000)).toBe('short');
  });

  it('reads the last error of the outputs, bounded and without ANSI', () => {
    const huge = Array.from({ length: 2000 }, (_, i) => `frame ${i}`);
    const error = errorOf([
      { output_type: 'stream', name: 'stdout', text: 'hi' },
      {
        output_type: 'error',
        ename: 'ZeroDivisionError',
        evalue: 'division by zero',
        traceback: [...huge, ...TRACEBACK]
      }
    ]);
    expect(error?.ename).toBe('ZeroDivisionError');
    expect(error?.traceback).not.toContain('\u001b');
    expect(error?.traceback.length).toBeLessThanOrEqual(MAX_TRACEBACK + 50);
    expect(error?.traceback.endsWith('division by zero')).toBe(true);
    expect(errorOf([{ output_type: 'stream', text: 'x' }])).toBeNull();
    expect(errorOf([null, 'junk'])).toBeNull();
  });

  it('carries the cell, its neighbours, the kernel and the error', () => {
    const r = askRequest({
      path: 'work/fix.ipynb',
      kernel: 'python3',
      cells: CELLS,
      index: 2,
      error: {
        ename: 'ZeroDivisionError',
        evalue: 'division by zero',
        traceback: 'tb'
      }
    });
    expect(r.path).toBe('work/fix.ipynb');
    expect(r.text).toContain(
      'cell 3 (id c2) of work/fix.ipynb, kernel python3'
    );
    expect(r.text).toContain('ZeroDivisionError: division by zero');
    expect(r.context.cells).toEqual([CELLS[2]]);
    expect(r.context.error).toMatchObject({ traceback: 'tb' });
    const around = r.context.neighbours as { id: string; index: number }[];
    expect(around.map(c => [c.id, c.index])).toEqual([
      ['c0', 0],
      ['c1', 1],
      ['c3', 3],
      ['c4', 4]
    ]);
    const att = r.attachments[0];
    expect(att.kind).toBe('cells');
    expect((att.cells as { id: string }[]).map(c => c.id)).toEqual([
      'c0',
      'c1',
      'c2',
      'c3',
      'c4'
    ]);
    expect(r.rules).toEqual([{ tool: 'execute_cell', action: 'ask' }]);
    // Without an error: a question about the cell.
    const plain = askRequest({
      path: 'a.ipynb',
      kernel: '',
      cells: CELLS,
      index: 0,
      error: null
    });
    expect(plain.text).toBe('Help me with cell 1 (id c0) of a.ipynb.');
    expect(plain.context.error).toBeUndefined();
  });

  it('adds its rule to a session policy once, keeping the rest', () => {
    const rule = { tool: 'execute_cell', action: 'ask' };
    const once = withRules({ mode: 'strict', always: ['bash'] }, [rule]);
    expect(once).toEqual({ mode: 'strict', always: ['bash'], rules: [rule] });
    expect(withRules(once, [rule]).rules).toEqual([rule]);
    expect(withRules(null, [rule])).toEqual({ rules: [rule] });
  });
});

describe('answered questions', () => {
  const asked = {
    type: 'question_asked',
    id: 'q1',
    question: 'Which colour?',
    options: ['red', 'green'],
    call_id: 'call_1'
  };

  it('fold onto their call once answered; pending ones stay cards', () => {
    let list = applyQuestionFrame([], asked);
    expect(pendingQuestions(list)).toHaveLength(1);
    expect(answeredFor(list, 'call_1')).toBeNull();
    list = applyQuestionFrame(list, {
      type: 'question_answered',
      id: 'q1',
      answer: 'green',
      source: 'notebook',
      user: 'Ada'
    });
    expect(pendingQuestions(list)).toHaveLength(0);
    const q = answeredFor(list, 'call_1');
    expect(q && describeAnswer(q)).toBe('Answered by Ada via notebook: green');
  });

  it('come back from the REST rows with their call', () => {
    const q = questionFromRow({
      id: 'q2',
      question: 'Why?',
      status: 'closed',
      source: 'timeout',
      call_id: 'call_2'
    });
    expect(q.callId).toBe('call_2');
    expect(describeAnswer(q)).toBe('No answer in time (the agent was told)');
  });
});
