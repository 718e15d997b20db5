// @vitest-environment jsdom
import React, { act } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { ApprovalsContext } from '../src/approvalCards';
import type { ApprovalsModel } from '../src/approvals';
import type { IToolCallState } from '../src/chatState';
import { Composer } from '../src/composer';
import { contextChipLabel, sameSummary } from '../src/context';
import { atBottom, MessageList, sentByUser } from '../src/messageView';
import { initialState, reduceAll } from '../src/reducer';
import { ToolCard } from '../src/toolCard';
import { argumentRows, subagentRecords, toolStatusView } from '../src/toolView';
import { button, click, fakeRendermime, IMounted, mount, type } from './render';

let m: IMounted | null = null;
afterEach(() => {
  m?.unmount();
  m = null;
});

const call = (over: Partial<IToolCallState>): IToolCallState => ({
  id: 'c1',
  name: 'bash',
  input: { command: 'ls' },
  status: 'complete',
  messageId: 'a1',
  progress: '',
  ...over
});

describe('tool cards', () => {
  it('call a rejected call rejected, not failed', () => {
    expect(
      toolStatusView(call({ status: 'error', summary: 'rejected' }))
    ).toEqual({ label: 'rejected', kind: 'rejected' });
    expect(
      toolStatusView(call({ status: 'error', summary: 'exit 1' }))
    ).toEqual({ label: 'failed', kind: 'error' });
    m = mount(
      <ToolCard
        call={call({
          status: 'error',
          summary: 'rejected',
          output: 'The user rejected this bash call; it was not run.'
        })}
      />
    );
    const card = m.container.querySelector('.jp-ThinkToolCard')!;
    expect(card.className).toContain('jp-mod-rejected');
    expect(card.className).not.toContain('jp-mod-error');
    expect(card.querySelector('.jp-ThinkToolCard-status')?.textContent).toBe(
      'rejected'
    );
    expect(card.querySelector('.jp-ThinkToolCard-error')).toBeNull();
  });

  it('show our own tools readably: arguments as rows, subagent reports as records', () => {
    expect(
      argumentRows({
        title: 'Count',
        dependencies: ['a', 'b'],
        n: 2,
        body: 'x\ny'
      })
    ).toEqual([
      { name: 'title', value: 'Count', block: false },
      { name: 'dependencies', value: 'a, b', block: false },
      { name: 'n', value: '2', block: false },
      { name: 'body', value: 'x\ny', block: true }
    ]);
    expect(argumentRows('raw')).toBeNull();
    const report =
      '{"task_id": "count", "title": "Count the lines", "status": "complete", "model": "fast", "seconds": 2.1, "steps": 1, "tool_calls": 1, "result": "3 lines"}\n' +
      '{"task_id": "list", "title": "List", "status": "error", "error": "boom"}';
    const records = subagentRecords('wait_for_subagents', report)!;
    expect(records.map(r => [r.title, r.status, r.detail, r.result])).toEqual([
      ['Count the lines', 'complete', 'fast · 2.1 s · 1 step', '3 lines'],
      ['List', 'error', '', '']
    ]);
    expect(subagentRecords('bash', report)).toBeNull();
    expect(subagentRecords('wait_for_subagents', 'No subagents')).toBeNull();

    m = mount(
      <ToolCard
        call={call({
          name: 'wait_for_subagents',
          input: {},
          output: report,
          summary: '2/2 ended'
        })}
      />
    );
    click(m.container.querySelector('.jp-ThinkToolCard-header')!);
    const body = m.container.querySelector('.jp-ThinkToolCard-body')!;
    expect(body.textContent).toContain('Count the lines');
    expect(body.textContent).toContain('3 lines');
    expect(body.textContent).not.toContain('"task_id"');
    m.unmount();
    m = mount(
      <ToolCard
        call={call({
          name: 'create_subtask',
          input: { title: 'Count the lines', type: 'explore', name: 'count' },
          output: 'Created task count (pending).'
        })}
      />
    );
    const header = m.container.querySelector('.jp-ThinkToolCard-args')!;
    expect(header.textContent).toBe('Count the lines');
    click(m.container.querySelector('.jp-ThinkToolCard-header')!);
    const dl = m.container.querySelector('.jp-ThinkToolCard-args-list')!;
    expect(dl.textContent).toBe('titleCount the linestypeexplorenamecount');
    expect(m.container.textContent).not.toContain('{');
  });

  it('show a decided approval as one line that expands to the whole card', () => {
    const approval = {
      id: 'ap1',
      tool: 'bash',
      input: { command: 'rm x' },
      summary: 'bash: rm x',
      diff: '',
      reason: '',
      status: 'rejected' as const,
      callId: 'c1',
      decided: {
        decision: 'reject',
        user: 'ada',
        source: 'sidebar',
        reason: 'not now'
      }
    };
    const list = [approval];
    const model = {
      subscribe: () => () => undefined,
      getSnapshot: () => list
    } as unknown as ApprovalsModel;
    m = mount(
      <ApprovalsContext.Provider value={model}>
        <ToolCard call={call({ status: 'error', summary: 'rejected' })} />
        <ToolCard call={call({ id: 'other' })} />
      </ApprovalsContext.Provider>
    );
    const lines = m.container.querySelectorAll('.jp-ThinkApprovalLine');
    expect(lines.length).toBe(1);
    const header = lines[0].querySelector('button')!;
    expect(header.textContent).toBe('Rejected by ada via sidebar: not now');
    expect(lines[0].querySelector('.jp-ThinkApproval')).toBeNull();
    click(header);
    const card = lines[0].querySelector('.jp-ThinkApproval')!;
    expect(card.textContent).toContain('rm x');
    expect(card.querySelector('.jp-ThinkApproval-actions')).toBeNull();
  });
});

describe('context chips', () => {
  it('name the document and its selected cells', () => {
    expect(
      contextChipLabel({ path: 'a/notes.md', kind: 'file', cells: [] })
    ).toBe('notes.md');
    expect(
      contextChipLabel({ path: 'x.ipynb', kind: 'notebook', cells: [2] })
    ).toBe('x.ipynb · cell 3');
    expect(
      contextChipLabel({ path: 'x.ipynb', kind: 'notebook', cells: [0, 1] })
    ).toBe('x.ipynb · 2 cells');
    const a = { path: 'x.ipynb', kind: 'notebook' as const, cells: [0] };
    expect(sameSummary(a, { ...a, cells: [0] })).toBe(true);
    expect(sameSummary(a, { ...a, cells: [1] })).toBe(false);
    expect(sameSummary(null, a)).toBe(false);
  });

  it('attach nothing by default; the active file is added and removed as a chip', () => {
    const onAttachChange = vi.fn();
    const onSend = vi.fn();
    const props = {
      running: false,
      canRetry: false,
      attach: false,
      context: { path: 'notes.md', kind: 'file' as const, cells: [] },
      onAttachChange,
      onSend,
      onStopAndSend: vi.fn(),
      onStop: vi.fn(),
      onRetry: vi.fn()
    };
    m = mount(<Composer {...props} />);
    const el = m.container;
    const input = el.querySelector('textarea')!;
    // The composer says what is sent; no chip, an offer to attach.
    expect(input.placeholder).toMatch(/nothing is attached unless you add it/);
    expect(el.querySelector('[data-kind="context"]')).toBeNull();
    click(button(el, 'Attach notes.md'));
    expect(onAttachChange).toHaveBeenLastCalledWith(true);
    act(() => m!.root.render(<Composer {...props} attach />));
    const chip = el.querySelector('[data-kind="context"]')!;
    expect(chip.textContent).toContain('notes.md');
    expect(el.querySelector('.jp-ThinkComposer-attach')).toBeNull();
    click(button(el, 'Remove notes.md'));
    expect(onAttachChange).toHaveBeenLastCalledWith(false);
    // Selected cells of a notebook show on the chip.
    act(() =>
      m!.root.render(
        <Composer
          {...props}
          attach
          context={{ path: 'a.ipynb', kind: 'notebook', cells: [0, 3] }}
        />
      )
    );
    expect(el.querySelector('[data-kind="context"]')?.textContent).toContain(
      'a.ipynb · 2 cells'
    );
    type(input, 'hi');
    click(button(el, 'Send'));
    expect(onSend).toHaveBeenCalledWith('hi', []);
  });
});

/** Give a jsdom element the geometry of a scroller (jsdom lays nothing out). */
function geometry(el: HTMLElement, height: number, client: number): void {
  Object.defineProperty(el, 'scrollHeight', {
    configurable: true,
    get: () => height
  });
  Object.defineProperty(el, 'clientHeight', {
    configurable: true,
    get: () => client
  });
}

describe('following the conversation', () => {
  it('knows the bottom and a message just sent', () => {
    expect(
      atBottom({ scrollHeight: 1000, scrollTop: 700, clientHeight: 290 })
    ).toBe(true);
    expect(
      atBottom({ scrollHeight: 1000, scrollTop: 500, clientHeight: 290 })
    ).toBe(false);
    const s = reduceAll(initialState(), [
      { type: 'local/user_message', id: 'u1', content: 'hi' }
    ]);
    expect(sentByUser(s, undefined)).toBe(true);
    expect(sentByUser(s, 'u1')).toBe(false);
  });

  it('stops following when scrolled up, offers Jump to latest, and shows what is sent', () => {
    let state = initialState();
    const frames: Parameters<typeof reduceAll>[1] = [
      { type: 'local/session', session: { id: 's1', title: 'S' } }
    ];
    for (let i = 0; i < 6; i++) {
      frames.push({
        type: 'local/user_message',
        id: `u${i}`,
        content: `q${i}`
      });
    }
    state = reduceAll(state, frames);
    const list = (s: typeof state) => (
      <MessageList
        state={s}
        rendermime={fakeRendermime()}
        onOpenPath={() => undefined}
        onEdit={() => undefined}
        onLoadOlder={async () => false}
      />
    );
    m = mount(list(state));
    const scroller = m.container.querySelector(
      '.jp-ThinkMessages'
    ) as HTMLElement;
    geometry(scroller, 1000, 300);
    const scrollTo = (top: number) =>
      act(() => {
        scroller.scrollTop = top;
        scroller.dispatchEvent(new Event('scroll'));
      });
    scrollTo(700);
    expect(m.container.querySelector('.jp-ThinkJumpLatest')).toBeNull();
    scrollTo(300);
    const jump = m.container.querySelector('.jp-ThinkJumpLatest');
    expect(jump?.textContent).toBe('Jump to latest');
    click(jump!);
    expect(scroller.scrollTop).toBe(1000);
    expect(m.container.querySelector('.jp-ThinkJumpLatest')).toBeNull();
    scrollTo(300);
    // A message you send is shown, wherever you had scrolled to.
    state = reduceAll(state, [
      { type: 'local/user_message', id: 'x', content: 'more' }
    ]);
    geometry(scroller, 1200, 300);
    act(() => m!.root.render(list(state)));
    expect(scroller.scrollTop).toBe(1200);
    expect(m.container.querySelector('.jp-ThinkJumpLatest')).toBeNull();
  });
});
