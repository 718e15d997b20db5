import { describe, expect, it } from 'vitest';

import { formatDuration, looksLikePath, summariseInput } from '../src/format';
import { BACKOFF_MAX_MS, BACKOFF_MIN_MS, backoffDelay } from '../src/ws';

describe('looksLikePath', () => {
  it.each(['notes.md', 'src/app.py', './a/b.ipynb', 'pkg/mod.py:12'])(
    'accepts %s',
    p => expect(looksLikePath(p)).toBe(true)
  );
  it.each([
    'print',
    'x = 1',
    '3.14',
    'https://x.org/a.py',
    'a b.py',
    'v1.2.3',
    'os.path',
    'np.array'
  ])('rejects %s', p => expect(looksLikePath(p)).toBe(false));
});

describe('tool card helpers', () => {
  it('summarises the main argument', () => {
    expect(summariseInput({ command: 'ls -la' })).toBe('ls -la');
    expect(summariseInput({ path: 'a.py', content: 'x' })).toBe('a.py');
    expect(summariseInput({ n: 1, tags: ['a'] })).toBe('n: 1, tags: ["a"]');
    expect(
      summariseInput({ title: 'Count the lines', type: 'explore', name: 'c' })
    ).toBe('Count the lines');
    expect(summariseInput({ task_ids: [] })).toBe('task_ids: []');
    expect(summariseInput(undefined)).toBe('');
  });

  it('formats durations', () => {
    expect(formatDuration(12.4)).toBe('12 ms');
    expect(formatDuration(1500)).toBe('1.5 s');
    expect(formatDuration(65000)).toBe('65 s');
    expect(formatDuration(undefined)).toBe('');
  });
});

describe('reconnect backoff', () => {
  it('doubles from the minimum up to the cap, with jitter in [base/2, base]', () => {
    expect(backoffDelay(0, () => 1)).toBe(BACKOFF_MIN_MS);
    expect(backoffDelay(0, () => 0)).toBe(BACKOFF_MIN_MS / 2);
    expect(backoffDelay(3, () => 1)).toBe(BACKOFF_MIN_MS * 8);
    expect(backoffDelay(30, () => 1)).toBe(BACKOFF_MAX_MS);
  });
});
