// @vitest-environment jsdom
import { ServerConnection } from '@jupyterlab/services';
import React from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { ThinkApi } from '../src/api';
import { Composer } from '../src/composer';
import {
  changeCount,
  diffLines,
  ReviewModel,
  reviewApi,
  type IDecision,
  type IProposal,
  type IReviewApi
} from '../src/review';
import { decorate, INLINE_CLASS, type ICellLike } from '../src/reviewInline';
import { ReviewPanel, ReviewToggle } from '../src/reviewPanel';
import { ChatStore } from '../src/store';
import type { ServerFrame } from '../src/wire';
import type { ISocketHandlers } from '../src/ws';
import { button, click, IMounted, mount, settle } from './render';

let m: IMounted | null = null;
afterEach(() => {
  m?.unmount();
  m = null;
});

/** A proposal in the contract's shape: two cells of a notebook and a helper's hunk. */
function proposal(review = true): IProposal {
  return {
    session_id: 's1',
    review,
    mode_detail: 'copy',
    files: [
      {
        path: 'analysis.ipynb',
        kind: 'notebook',
        status: 'modified',
        missing: false,
        diff: '',
        hunks: [],
        cells: [
          {
            id: 'analysis.ipynb::cell:c1',
            cell_id: 'c1',
            status: 'modified',
            cell_type: 'code',
            base_source: 'x = 1',
            source: 'x = 10',
            source_diff: '@@ -1 +1 @@\n-x = 1\n+x = 10\n',
            outputs_changed: true,
            index: 0
          },
          {
            id: 'analysis.ipynb::cell:n1',
            cell_id: 'n1',
            status: 'added',
            cell_type: 'code',
            base_source: null,
            source: 'z = 3',
            source_diff: '',
            outputs_changed: false,
            index: 2
          }
        ]
      },
      {
        path: 'helper.py',
        kind: 'file',
        status: 'modified',
        missing: true,
        diff: '--- a/helper.py\n+++ b/helper.py\n@@ -1 +1 @@\n-a = 1\n+a = 5\n',
        hunks: [
          {
            id: 'helper.py::hunk:0',
            header: '@@ -1 +1 @@',
            lines: ['-a = 1', '+a = 5']
          }
        ]
      }
    ]
  };
}

/** A chat store on session s1 with a fake socket, and a review model on a fake API. */
function setup(answer: IProposal = proposal()) {
  let handlers: ISocketHandlers | null = null;
  const api = {
    wsUrl: (id: string) => `ws://x/${id}`,
    usage: async () => {
      throw new Error('no usage here');
    },
    settings: {}
  } as unknown as ThinkApi;
  const store = new ChatStore(
    api,
    cb => cb(),
    (_url, h) => {
      handlers = h;
      return { send: () => true, dispose: () => undefined };
    }
  );
  vi.spyOn(console, 'warn').mockImplementation(() => undefined);
  const decision: IDecision = {
    accepted: ['analysis.ipynb::cell:c1'],
    rejected: [],
    conflicts: [
      {
        id: 'analysis.ipynb::cell:c1',
        path: 'analysis.ipynb',
        detail: 'the cell changed since the agent read it'
      }
    ],
    errors: [],
    proposal: { ...answer, files: answer.files.slice(1) }
  };
  const rest = {
    get: vi.fn(async () => answer),
    decide: vi.fn(async () => decision),
    setReview: vi.fn(async () => undefined)
  } satisfies IReviewApi;
  store.open({ id: 's1', title: 'T' });
  const model = new ReviewModel(store, rest);
  const frame = (f: Record<string, unknown>) =>
    handlers!.onFrame(f as unknown as ServerFrame);
  return { store, model, rest, frame };
}

describe('review model', () => {
  it('reads the open session’s proposal and again on its proposal frames', async () => {
    const { model, rest, frame, store } = setup();
    await settle();
    expect(rest.get).toHaveBeenCalledWith('s1');
    expect(model.getSnapshot().proposal?.files.map(f => f.path)).toEqual([
      'analysis.ipynb',
      'helper.py'
    ]);
    frame({ type: 'proposal', session_id: 'other', count: 1 });
    await settle();
    expect(rest.get).toHaveBeenCalledTimes(1);
    frame({ type: 'proposal', session_id: 's1', count: 3 });
    await settle();
    expect(rest.get).toHaveBeenCalledTimes(2);
    // Another session: its own proposal, the old one gone at once.
    store.open({ id: 's2', title: 'U' });
    expect(model.getSnapshot().proposal).toBeNull();
    await settle();
    expect(rest.get).toHaveBeenLastCalledWith('s2');
  });

  it('keeps a decision’s conflicts and its proposal', async () => {
    const { model, rest } = setup();
    await settle();
    await model.decide(['analysis.ipynb::cell:c1'], []);
    expect(rest.decide).toHaveBeenCalledWith('s1', {
      accept: ['analysis.ipynb::cell:c1'],
      reject: []
    });
    const snap = model.getSnapshot();
    expect(snap.conflicts[0].detail).toMatch(/changed since/);
    expect(snap.proposal?.files.map(f => f.path)).toEqual(['helper.py']);
    expect(snap.busy).toBe(false);
  });

  it('switches review mode and says so on the session', async () => {
    const { model, rest, store } = setup(proposal(false));
    await settle();
    await model.setReview(true);
    expect(rest.setReview).toHaveBeenCalledWith('s1', true);
    expect(store.state.session?.review).toBe(true);
  });

  it('shows a failed read instead of hiding it', async () => {
    const { model, rest } = setup();
    rest.get.mockRejectedValueOnce(new Error('404: no such route'));
    await model.refresh();
    expect(model.getSnapshot().failure).toMatch(/404: no such route/);
  });
});

describe('diffs', () => {
  it('marks added, removed, hunk and header lines', () => {
    expect(
      diffLines('--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n c\n').map(l => l.kind)
    ).toEqual(['file', 'file', 'hunk', 'del', 'add', 'ctx']);
    expect(diffLines('--- base\n+++ proposed\n-a\n+b', false)).toEqual([
      { kind: 'del', text: '-a' },
      { kind: 'add', text: '+b' }
    ]);
    expect(changeCount(proposal())).toBe(3);
  });
});

describe('review panel', () => {
  it('lists files, cells and hunks with Accept and Reject for each, and all', async () => {
    const { model, rest } = setup();
    await settle();
    m = mount(<ReviewPanel model={model} />);
    const c = m.container;
    expect(c.querySelector('.jp-ThinkReview-title')?.textContent).toBe(
      'Proposal: 3 changes in 2 files'
    );
    expect(c.querySelector('.jp-ThinkReview-outputs')?.textContent).toMatch(
      /outputs changed/
    );
    expect(c.querySelector('.jp-ThinkReview-missing')).not.toBeNull();
    const adds = [...c.querySelectorAll('.jp-ThinkReview-line[data-kind]')]
      .filter(l => l.getAttribute('data-kind') === 'add')
      .map(l => l.textContent);
    expect(adds).toEqual(['+x = 10\n', '+a = 5\n']);
    // Every button has a name that says what it decides.
    for (const name of [
      'Accept all proposed changes',
      'Reject all proposed changes',
      'Accept analysis.ipynb',
      'Reject helper.py',
      'Accept cell 1 of analysis.ipynb',
      'Reject cell 3 of analysis.ipynb',
      'Accept hunk 1 of helper.py'
    ]) {
      expect(button(c, name)).toBeTruthy();
    }
    click(button(c, 'Reject cell 3 of analysis.ipynb'));
    expect(rest.decide).toHaveBeenLastCalledWith('s1', {
      accept: [],
      reject: ['analysis.ipynb::cell:n1']
    });
    await settle();
    click(button(c, 'Accept all proposed changes'));
    expect(rest.decide).toHaveBeenLastCalledWith('s1', {
      accept: 'all',
      reject: []
    });
    await settle();
    // The conflict is shown, by its file, though the cell left the list.
    const conflict = c.querySelector('.jp-ThinkReview-conflict');
    expect(conflict?.textContent).toBe(
      'Conflict: the cell changed since the agent read it'
    );
  });

  it('shows nothing without a proposal while review mode is off', async () => {
    const { model } = setup({ ...proposal(false), files: [] });
    await settle();
    m = mount(<ReviewPanel model={model} />);
    expect(m.container.innerHTML).toBe('');
  });

  it('the header switch is pressed while review mode is on', async () => {
    const { model, rest } = setup(proposal(false));
    await settle();
    m = mount(<ReviewToggle model={model} sessionReview={false} />);
    const b = button(m.container, 'Review mode');
    expect(b.getAttribute('aria-pressed')).toBe('false');
    click(b);
    expect(rest.setReview).toHaveBeenCalledWith('s1', true);
  });
});

describe('inline decorations', () => {
  const cells = (ids: string[]): ICellLike[] =>
    ids.map(id => {
      const node = document.createElement('div');
      node.innerHTML = '<div class="jp-Cell-inputWrapper"></div>';
      return { node, model: { id } };
    });

  it('puts a changed cell on its live cell and a new one where it goes', async () => {
    const { model } = setup();
    await settle();
    const live = cells(['c1', 'c2', 'c3']);
    const decide = vi.fn();
    const file = model.getSnapshot().proposal!.files[0];
    expect(decorate(live, file, model.getSnapshot(), decide)).toBe(2);
    const on = (i: number) =>
      [...live[i].node.querySelectorAll(`.${INLINE_CLASS}`)].map(
        n => (n as HTMLElement).dataset.id
      );
    expect(on(0)).toEqual(['analysis.ipynb::cell:c1']);
    // Added at index 2: after the second live cell.
    expect(on(1)).toEqual(['analysis.ipynb::cell:n1']);
    expect(on(2)).toEqual([]);
    const mark = live[0].node.querySelector(`.${INLINE_CLASS}`)!;
    expect(mark.hasAttribute('data-lm-suppress-shortcuts')).toBe(true);
    click(button(live[1].node, 'Reject proposed new cell 3'));
    expect(decide).toHaveBeenCalledWith([], ['analysis.ipynb::cell:n1']);
    click(button(live[0].node, 'Accept proposed change to cell 1'));
    expect(decide).toHaveBeenCalledWith(['analysis.ipynb::cell:c1'], []);
    // Redrawn without the proposal: nothing stays.
    expect(decorate(live, null, model.getSnapshot(), decide)).toBe(0);
    expect(live.every(c => !c.node.querySelector(`.${INLINE_CLASS}`))).toBe(
      true
    );
  });

  it('shows a conflict on the cell it is about', async () => {
    const { model } = setup();
    await settle();
    const file = model.getSnapshot().proposal!.files[0];
    await model.decide(['analysis.ipynb::cell:c1'], []);
    const live = cells(['c1']);
    decorate(live, file, model.getSnapshot(), vi.fn());
    expect(
      live[0].node.querySelector(`.${INLINE_CLASS}-conflict`)?.textContent
    ).toBe('Conflict: the cell changed since the agent read it');
  });
});

describe('propose only', () => {
  it('the composer offers it as a toggle', () => {
    const change = vi.fn();
    m = mount(
      <Composer
        running={false}
        canRetry={false}
        attach={false}
        context={null}
        onAttachChange={vi.fn()}
        onSend={vi.fn()}
        onStopAndSend={vi.fn()}
        onStop={vi.fn()}
        onRetry={vi.fn()}
        proposeOnly={false}
        onProposeOnlyChange={change}
      />
    );
    const b = button(m.container, 'Propose only');
    expect(b.getAttribute('aria-pressed')).toBe('false');
    click(b);
    expect(change).toHaveBeenCalledWith(true);
  });

  it('a refused decision answers its errors, not a bare status', async () => {
    const refused = {
      accepted: [],
      rejected: [],
      conflicts: [],
      errors: [{ id: 'gone.py', detail: 'not in the proposal' }],
      proposal: proposal()
    };
    const settings = ServerConnection.makeSettings({
      baseUrl: 'http://h/',
      fetch: (async () =>
        new Response(JSON.stringify(refused), { status: 400 })) as never
    });
    const d = await reviewApi(settings).decide('s1', {
      accept: ['gone.py'],
      reject: []
    });
    expect(d.errors[0].detail).toBe('not in the proposal');
    await expect(reviewApi(settings).get('s1')).rejects.toThrow(/^400/);
  });

  it('a message sent with it says propose_only, and the review routes', async () => {
    const calls: { url: string; method: string; body: string }[] = [];
    const fetch = vi.fn(async (req: RequestInfo, init?: RequestInit) => {
      const url = (typeof req === 'string' ? req : req.url).split('?')[0];
      const method = init?.method ?? (req as Request).method ?? 'GET';
      const body =
        init?.body !== undefined
          ? String(init.body)
          : ((await (req as Request).text?.()) ?? '');
      calls.push({ url, method, body });
      return new Response(
        JSON.stringify({ message: { id: 'u1' }, ...proposal() }),
        { status: 200 }
      );
    });
    const settings = ServerConnection.makeSettings({
      baseUrl: 'http://h/',
      fetch: fetch as never
    });
    await new ThinkApi(settings).sendMessage('s1', 'hi', { proposeOnly: true });
    const rest = reviewApi(settings);
    await rest.get('s1');
    await rest.decide('s1', { accept: ['helper.py'], reject: 'all' });
    await rest.setReview('s1', true);
    expect(calls).toEqual([
      {
        url: 'http://h/api/think/sessions/s1/messages',
        method: 'POST',
        body: '{"content":"hi","propose_only":true}'
      },
      {
        url: 'http://h/api/think/sessions/s1/proposal',
        method: 'GET',
        body: ''
      },
      {
        url: 'http://h/api/think/sessions/s1/proposal',
        method: 'POST',
        body: '{"accept":["helper.py"],"reject":"all"}'
      },
      {
        url: 'http://h/api/think/sessions/s1',
        method: 'PATCH',
        body: '{"review":true}'
      }
    ]);
  });
});
