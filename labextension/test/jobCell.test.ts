import { describe, expect, it } from 'vitest';

import { backgroundSource } from '../src/jobCell';

describe('a cell run in the background', () => {
  it('runs a %%bash body as the job', () => {
    expect(backgroundSource('%%bash\nfor i in 1 2; do echo $i; done\n')).toBe(
      '%%think_job\nfor i in 1 2; do echo $i; done\n'
    );
  });

  it('gives a %%python body to python3 on standard input', () => {
    expect(backgroundSource('%%python\nprint(1)')).toBe(
      "%%think_job\npython3 -u - <<'THINK_PY_END'\nprint(1)\nTHINK_PY_END"
    );
    // A body line equal to the delimiter does not end the here-document.
    expect(backgroundSource('%%python\nTHINK_PY_END = 1\nTHINK_PY_END\n')).toBe(
      "%%think_job\npython3 -u - <<'THINK_PY_END_'\nTHINK_PY_END = 1\nTHINK_PY_END\nTHINK_PY_END_"
    );
  });

  it('keeps a job cell and refuses requests, commands and empty code', () => {
    expect(backgroundSource('%%think_job train\nmake')).toBe(
      '%%think_job train\nmake'
    );
    expect(backgroundSource('plot the data')).toBeNull();
    expect(backgroundSource('%model gpt')).toBeNull();
    expect(backgroundSource('%%bash\n  \n')).toBeNull();
    expect(backgroundSource('%%sql\nselect 1')).toBeNull();
  });
});
