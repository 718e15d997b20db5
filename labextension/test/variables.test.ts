import { describe, expect, it } from 'vitest';

import { attachmentLabel } from '../src/attachments';
import {
  chipsOf,
  variableLabel,
  variableTokens,
  type IVariablesAnswer
} from '../src/variables';

const ok: IVariablesAnswer = {
  status: 'ok',
  path: 'nb.ipynb',
  message: '',
  text: '',
  variables: [
    {
      name: 'df',
      type: 'pandas.DataFrame',
      kind: 'dataframe',
      shape: [3, 2],
      text: 'df: pandas.DataFrame, 3 rows × 2 columns'
    }
  ],
  missing: ['nope']
};

describe('@name tokens', () => {
  it('finds each name once, not e-mail addresses', () => {
    expect(variableTokens('plot @df and @arr, then @df again')).toEqual([
      'df',
      'arr'
    ]);
    expect(variableTokens('mail me@example.com')).toEqual([]);
    expect(variableTokens('(@x)')).toEqual(['x']);
    expect(variableTokens('@1abc @_ok')).toEqual(['_ok']);
  });

  it('labels a chip with the type and shape', () => {
    expect(variableLabel(ok.variables[0])).toBe('@df · DataFrame 3×2');
    expect(variableLabel({ name: 'n', type: 'int' })).toBe('@n · int');
  });
});

describe('chips of an answer', () => {
  it('attaches found variables, skips absent ones', () => {
    const chips = chipsOf(['df', 'nope'], 'nb.ipynb', ok);
    const df = chips.get('df');
    expect(df?.error).toBeUndefined();
    expect(df?.cells).toEqual({
      kind: 'variables',
      name: 'df',
      path: 'nb.ipynb',
      text: 'df: pandas.DataFrame, 3 rows × 2 columns'
    });
    expect(chips.get('nope')).toBeNull();
    expect(attachmentLabel(df!.cells!)).toBe('@df');
  });

  it('a kernel that cannot answer makes an error chip, never sent', () => {
    const busy: IVariablesAnswer = {
      ...ok,
      status: 'busy',
      message: 'the kernel is busy',
      variables: []
    };
    const chip = chipsOf(['df'], 'nb.ipynb', busy).get('df');
    expect(chip?.error).toBe('kernel busy');
    expect(chip?.cells).toBeUndefined();
  });
});
