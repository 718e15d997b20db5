// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';

import { cellMimeType, isThinkMagic, MARKDOWN_MIME } from '../src/cellKinds';

describe('Think cells', () => {
  it('give a %%think cell Markdown, every other cell its notebook language', () => {
    expect(isThinkMagic('%%think\nplot the data')).toBe(true);
    expect(isThinkMagic('  %%think --new\n')).toBe(true);
    expect(isThinkMagic('%%thinking\n')).toBe(false);
    expect(isThinkMagic('print("%%think")')).toBe(false);
    expect(cellMimeType('%%think\n# Plot', 'text/x-ipython')).toBe(
      MARKDOWN_MIME
    );
    expect(cellMimeType('import os', 'text/x-ipython')).toBe('text/x-ipython');
  });
});
