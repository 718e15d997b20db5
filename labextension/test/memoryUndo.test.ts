import { describe, expect, it } from 'vitest';

import type { IToolCallState } from '../src/chatState';
import { rememberedLine } from '../src/memoryUndo';

function call(over: Partial<IToolCallState>): IToolCallState {
  return {
    id: 'c1',
    name: 'remember',
    input: { text: 'x' },
    status: 'complete',
    messageId: 'm1',
    progress: '',
    ...over
  };
}

describe('rememberedLine', () => {
  it('takes the line from the summary, else from the output', () => {
    const line = '- 2026-11-28: use uv';
    expect(rememberedLine(call({ summary: `remembered: ${line}` }))).toBe(line);
    expect(
      rememberedLine(call({ output: `Remembered in /m/MEMORY.md:\n${line}\n` }))
    ).toBe(line);
  });

  it('is null for other tools, failed or running calls', () => {
    const summary = 'remembered: - 2026-11-28: x';
    expect(rememberedLine(call({ name: 'bash', summary }))).toBeNull();
    expect(rememberedLine(call({ status: 'error', summary }))).toBeNull();
    expect(rememberedLine(call({ status: 'running' }))).toBeNull();
    expect(rememberedLine(call({ output: 'Error: nothing' }))).toBeNull();
  });
});
