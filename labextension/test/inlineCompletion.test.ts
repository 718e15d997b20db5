// @vitest-environment jsdom
import { InlineCompletionTriggerKind } from '@jupyterlab/completer';
import type { IInlineCompletionContext } from '@jupyterlab/completer';
import type { Widget } from '@lumino/widgets';
import { describe, expect, it } from 'vitest';

import {
  documentContext,
  ICompletionAnswer,
  ICompletionBody,
  ICompletionTransport,
  MIN_QUIET_MS,
  PROVIDER_ID,
  RECHECK_MS,
  ThinkInlineProvider
} from '../src/inlineCompletion';

/** The server as the provider sees it: answers held until the test releases them. */
class Server implements ICompletionTransport {
  configuredCalls = 0;
  bodies: ICompletionBody[] = [];
  signals: AbortSignal[] = [];
  private pending: Array<(a: ICompletionAnswer) => void> = [];

  constructor(
    public hasModel = true,
    public text = 'upby("region")'
  ) {}

  async configured(): Promise<boolean> {
    this.configuredCalls++;
    return this.hasModel;
  }

  complete(body: ICompletionBody, signal: AbortSignal) {
    this.bodies.push(body);
    this.signals.push(signal);
    return new Promise<ICompletionAnswer>((resolve, reject) => {
      signal.addEventListener('abort', () =>
        reject(new DOMException('aborted', 'AbortError'))
      );
      this.pending.push(resolve);
    });
  }

  /** Answer every request still waiting. */
  answerAll() {
    const answer = {
      completion: this.text,
      configured: this.hasModel,
      model: 'fake-fast',
      model_ms: 1,
      reason: '',
      error: ''
    };
    this.pending.splice(0).forEach(resolve => resolve(answer));
  }
}

function notebook(sources: Array<[string, string]>, active: number) {
  return {
    context: { path: 'work/analysis.ipynb' },
    content: {
      activeCellIndex: active,
      model: {
        cells: sources.map(([type, text]) => ({
          type,
          sharedModel: { getSource: () => text }
        }))
      }
    }
  };
}

const widget = notebook(
  [
    ['code', 'import pandas as pd'],
    ['markdown', '# Sales'],
    ['code', 'df = pd.read_csv("s.csv")'],
    ['code', 'df.gro'],
    ['code', 'after = 1']
  ],
  3
);

function ctx(
  trigger = InlineCompletionTriggerKind.Automatic
): IInlineCompletionContext {
  return { widget: widget as unknown as Widget, triggerKind: trigger };
}

const request = {
  text: 'df.gro\nprint(1)',
  offset: 6,
  mimeType: 'text/x-ipython'
};

/** Wait until `cond` holds (microtasks and timers run meanwhile). */
async function until(cond: () => boolean) {
  for (let i = 0; i < 500 && !cond(); i++) {
    await new Promise(r => setTimeout(r, 2));
  }
  expect(cond()).toBe(true);
}

describe('ThinkInlineProvider', () => {
  it('has a stable identifier and the name Think', () => {
    const p = new ThinkInlineProvider(new Server());
    expect(p.identifier).toBe(PROVIDER_ID);
    expect(p.name).toBe('Think');
    expect(p.schema.default.debouncerDelay).toBeGreaterThanOrEqual(
      MIN_QUIET_MS
    );
  });

  it('sends the text around the cursor and the cells above, and shows the answer', async () => {
    const server = new Server();
    const p = new ThinkInlineProvider(server);
    const result = p.fetch(request, ctx());
    await until(() => server.bodies.length === 1);
    server.answerAll();
    expect((await result).items).toEqual([{ insertText: 'upby("region")' }]);
    const body = server.bodies[0];
    expect(body.prefix).toBe('df.gro');
    expect(body.suffix).toBe('\nprint(1)');
    expect(body.path).toBe('work/analysis.ipynb');
    expect(body.cells).toEqual([
      'import pandas as pd',
      'df = pd.read_csv("s.csv")'
    ]);
    expect(body.language).toBe('text/x-ipython');
  });

  it('sends nothing when the server has no model, and asks again only later', async () => {
    const server = new Server(false);
    let now = 1_000;
    const p = new ThinkInlineProvider(server, () => now);
    for (let i = 0; i < 5; i++) {
      expect((await p.fetch(request, ctx())).items).toEqual([]);
    }
    expect(server.bodies).toEqual([]);
    expect(server.configuredCalls).toBe(1);
    server.hasModel = true;
    now += RECHECK_MS + 1;
    const result = p.fetch(request, ctx());
    await until(() => server.bodies.length === 1);
    server.answerAll();
    expect((await result).items).toHaveLength(1);
    expect(server.configuredCalls).toBe(2);
  });

  it('aborts the request in flight when the person types on', async () => {
    const server = new Server();
    const p = new ThinkInlineProvider(server);
    const first = p.fetch(request, ctx());
    await until(() => server.bodies.length === 1);
    const second = p.fetch({ ...request, text: 'df.grou', offset: 7 }, ctx());
    expect(server.signals[0].aborted).toBe(true);
    expect((await first).items).toEqual([]);
    await until(() => server.bodies.length === 2);
    server.answerAll();
    expect((await second).items).toHaveLength(1);
    expect(p.stats.aborted).toBe(1);
  });

  it('keeps a quiet time even with JupyterLab debouncer set to 0', async () => {
    const server = new Server();
    const p = new ThinkInlineProvider(server);
    p.configure({ debouncerDelay: 0 });
    const warm = p.fetch(request, ctx(InlineCompletionTriggerKind.Invoke));
    await until(() => server.bodies.length === 1);
    server.answerAll();
    await warm;
    // Keys 20 ms apart, as JupyterLab calls fetch with no debouncer: one request, the last.
    const typed: Promise<unknown>[] = [];
    const text = 'df.groupby';
    for (let i = 1; i <= text.length; i++) {
      typed.push(
        p.fetch({ ...request, text: text.slice(0, i), offset: i }, ctx())
      );
      await new Promise(r => setTimeout(r, 20));
    }
    await until(() => server.bodies.length === 2);
    server.answerAll();
    await Promise.all(typed);
    expect(server.bodies.map(b => b.prefix)).toEqual(['df.gro', 'df.groupby']);
    expect(p.stats.aborted).toBe(0);
  });

  it('sends nothing when the setting turns it off', async () => {
    const server = new Server();
    const p = new ThinkInlineProvider(server);
    p.enabled = false;
    expect((await p.fetch(request, ctx())).items).toEqual([]);
    expect(server.bodies).toEqual([]);
    expect(server.configuredCalls).toBe(0);
  });
});

describe('documentContext', () => {
  it('reads a file editor (no cells) and nothing at all', () => {
    expect(documentContext({ context: { path: 'a.py' } })).toEqual({
      path: 'a.py',
      cells: []
    });
    expect(documentContext(null)).toEqual({ path: '', cells: [] });
  });
});
