// @vitest-environment jsdom
import React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';

import type { ISearchHit } from '../src/api';
import { markedSnippet } from '../src/sessionSearch';

function hit(snippet: string, spans: [number, number][]): ISearchHit {
  return {
    session_id: 's_1',
    title: 't',
    kind: 'chat',
    message_id: 'm_1',
    seq: 1,
    role: 'user',
    created_at: 0,
    snippet,
    spans,
    facet: null,
    tool: null,
    off_branch: false,
    link: ''
  };
}

describe('markedSnippet', () => {
  it('marks the spans and keeps stored text as text, never HTML', () => {
    const html = renderToStaticMarkup(
      <span>{markedSnippet(hit('<b>x</b> use Parquet', [[13, 20]]))}</span>
    );
    expect(html).toBe(
      '<span>&lt;b&gt;x&lt;/b&gt; use <mark>Parquet</mark></span>'
    );
  });

  it('skips spans that overlap or run past the text', () => {
    const html = renderToStaticMarkup(
      <span>
        {markedSnippet(
          hit('abcdef', [
            [0, 2],
            [1, 3],
            [4, 99]
          ])
        )}
      </span>
    );
    expect(html).toBe('<span><mark>ab</mark>cdef</span>');
  });
});
