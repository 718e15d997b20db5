// @vitest-environment jsdom
import React, { act } from 'react';
import { afterEach, describe, expect, it } from 'vitest';

import { SubagentView } from '../src/subagentView';
import { TaskPanel } from '../src/taskPanel';
import {
  button,
  click,
  fakeRendermime,
  IMounted,
  mount,
  settle
} from './render';
import { later, setup, task } from './taskFixtures';

let m: IMounted | null = null;
afterEach(() => {
  m?.unmount();
  m = null;
});

/** A session whose request was split in three, one task delegated to a subagent. */
function tree() {
  const t = setup();
  const root = task('r', {
    title: 'Analyse sales',
    status: 'in_progress',
    progress: 0.5
  });
  const load = task('load', {
    parent_id: 'r',
    title: 'Load the CSV',
    type: 'explore',
    status: 'complete',
    progress: 1,
    subagent: { status: 'complete', model: 'fast' }
  });
  const plot = task('plot', {
    parent_id: 'r',
    title: 'Plot it',
    status: 'in_progress',
    subagent: { status: 'running', model: 'fast' }
  });
  const report = task('report', {
    parent_id: 'r',
    title: 'Write the report',
    status: 'blocked',
    dependencies: ['plot']
  });
  for (const x of [root, load, plot, report]) {
    t.frame({ type: 'task_created', task: x });
  }
  return { ...t, root, plot };
}

const rows = (el: HTMLElement) =>
  [...el.querySelectorAll('li.jp-ThinkTask')].map(li => [
    li.getAttribute('aria-label'),
    li.getAttribute('data-status')
  ]);

describe('the tasks area', () => {
  it('is absent while no request was decomposed', () => {
    const t = setup();
    t.frame({ type: 'task_created', task: task('lone') });
    t.flush();
    m = mount(<TaskPanel model={t.model} running />);
    expect(m.container.querySelector('.jp-ThinkTasks')).toBeNull();
  });

  it('shows the tree with status, type, progress, blocked hint and subagents', () => {
    const t = tree();
    t.flush();
    m = mount(<TaskPanel model={t.model} running />);
    const el = m.container;
    expect(el.querySelector('[aria-label="Tasks"]')).not.toBeNull();
    expect(rows(el)).toEqual([
      ['Task Analyse sales', 'in_progress'],
      ['Task Load the CSV', 'complete'],
      ['Task Plot it', 'in_progress'],
      ['Task Write the report', 'blocked']
    ]);
    const bar = (label: string) =>
      el
        .querySelector(`[role="progressbar"][aria-label="${label}"]`)
        ?.getAttribute('aria-valuenow');
    expect(bar('Overall progress')).toBe('50');
    expect(bar('Progress of Load the CSV')).toBe('100');
    expect(el.querySelector('.jp-ThinkTasks-count')?.textContent).toBe('1/3');
    expect(
      el.querySelector('[data-task-id="report"] [role="note"]')?.textContent
    ).toBe('waits for Plot it');
    expect(
      el.querySelector('[data-task-id="load"] .jp-ThinkTask-type')?.textContent
    ).toBe('explore');
    const badge = el.querySelector(
      '[data-task-id="plot"] .jp-ThinkSubagentBadge'
    )!;
    expect(badge.getAttribute('aria-label')).toBe('Subagent running');
    expect(badge.querySelector('.jp-ThinkSpinner')).not.toBeNull();
    expect(
      el
        .querySelector('[data-task-id="load"] .jp-ThinkSubagentBadge')
        ?.getAttribute('aria-label')
    ).toBe('Subagent done');
    // Icons are JupyterLab's, labelled by status (no emoji).
    expect(
      el
        .querySelector('[data-task-id="load"] .jp-ThinkTaskIcon')
        ?.getAttribute('aria-label')
    ).toBe('Complete');
    expect(el.querySelector('[data-task-id="load"] svg')).not.toBeNull();
    // A task without a subagent is not a button.
    expect(() => button(el, 'Open the subagent of Write the report')).toThrow();
  });

  it('re-renders on its own model notification, with nothing else changing', async () => {
    const t = setup({ ownSchedule: true });
    t.flush();
    m = mount(<TaskPanel model={t.model} running />);
    expect(m.container.querySelector('.jp-ThinkTasks')).toBeNull();
    // Task frames without a seq leave the chat state as it is: only the model tells.
    const chat = t.store.state;
    t.frame({ type: 'task_created', task: task('r2', { title: 'Root' }) });
    t.frame({
      type: 'task_created',
      task: task('k2', { parent_id: 'r2', title: 'Kid' })
    });
    t.flush();
    expect(t.store.state).toBe(chat);
    await settle();
    expect(rows(m.container).map(r => r[0])).toEqual(['Task Root', 'Task Kid']);
  });

  it('moves live, folds away, and opens a subagent on click', async () => {
    const t = tree();
    t.flush();
    m = mount(<TaskPanel model={t.model} running />);
    const el = m.container;
    act(() => {
      t.frame({
        type: 'task_updated',
        task: {
          ...t.plot,
          status: 'complete',
          progress: 1,
          updated_at: later()
        }
      });
      t.frame({
        type: 'task_updated',
        task: { ...t.root, progress: 0.75, updated_at: later() }
      });
      t.flush();
    });
    expect(
      el.querySelector('[data-task-id="plot"]')?.getAttribute('data-status')
    ).toBe('complete');
    expect(
      el
        .querySelector('[aria-label="Overall progress"]')
        ?.getAttribute('aria-valuenow')
    ).toBe('75');
    // The stream's end shows before the task's own update says so.
    act(() => {
      t.frame({ type: 'subagent_complete', task_id: 'plot', result: 'ok' });
      t.flush();
    });
    expect(
      el
        .querySelector('[data-task-id="plot"] .jp-ThinkSubagentBadge')
        ?.getAttribute('data-status')
    ).toBe('complete');
    click(button(el, 'Collapse Analyse sales'));
    expect(rows(el).length).toBe(1);
    click(button(el, 'Expand Analyse sales'));
    click(button(el, 'Hide the tasks'));
    expect(el.querySelector('li')).toBeNull();
    click(button(el, 'Show the tasks'));
    act(() => {
      click(button(el, 'Open the subagent of Plot it'));
      t.flush();
    });
    await settle();
    expect(t.model.getDrill()).toBe('plot');
    expect(
      el.querySelector('[data-task-id="plot"] .jp-ThinkTask-row')?.className
    ).toContain('jp-mod-selected');
  });
});

describe('the tasks area folds when its request ends', () => {
  it('is open while the request runs, folds after it, and stays open when pinned', () => {
    window.localStorage.removeItem('think:tasks-pinned');
    const t = tree();
    t.flush();
    m = mount(<TaskPanel model={t.model} running />);
    const el = m.container;
    expect(rows(el).length).toBe(4);
    act(() => m!.root.render(<TaskPanel model={t.model} running={false} />));
    expect(rows(el).length).toBe(0);
    expect(el.querySelector('.jp-ThinkTasks-header')).not.toBeNull();
    // Opened by hand it stays open until the next request starts.
    click(button(el, 'Show the tasks'));
    expect(rows(el).length).toBe(4);
    act(() => m!.root.render(<TaskPanel model={t.model} running />));
    act(() => m!.root.render(<TaskPanel model={t.model} running={false} />));
    expect(rows(el).length).toBe(0);
    // Pinned: open after the end, and still pinned on the next mount.
    click(button(el, 'Keep the tasks open'));
    expect(rows(el).length).toBe(4);
    expect(button(el, 'Keep the tasks open').getAttribute('aria-pressed')).toBe(
      'true'
    );
    m.unmount();
    m = mount(<TaskPanel model={t.model} running={false} />);
    expect(rows(m.container).length).toBe(4);
    window.localStorage.removeItem('think:tasks-pinned');
  });
});

describe('the subagent drill-in', () => {
  it('streams text and tool cards live, then goes back', async () => {
    const t = tree();
    t.frame({
      type: 'subagent_spawned',
      task_id: 'plot',
      title: 'Plot it',
      model: 'fast'
    });
    t.flush();
    t.model.open('plot');
    t.flush();
    m = mount(
      <SubagentView
        model={t.model}
        taskId="plot"
        rendermime={fakeRendermime()}
        onOpenPath={() => undefined}
      />
    );
    const el = m.container;
    const view = el.querySelector('[aria-label="Subagent: Plot it"]')!;
    expect(view.getAttribute('data-status')).toBe('running');
    expect(
      el.querySelector('[aria-label="Waiting for the subagent"]')
    ).not.toBeNull();
    act(() => {
      t.frame({
        type: 'subagent_text_delta',
        task_id: 'plot',
        delta: 'Plotting **now**.'
      });
      t.frame({
        type: 'subagent_tool_call',
        task_id: 'plot',
        id: 'c1',
        name: 'execute_code',
        input: { code: 'plot()' }
      });
      t.flush();
    });
    await settle();
    expect(el.querySelector('strong')?.textContent).toBe('now');
    const card = el.querySelector('.jp-ThinkToolCard')!;
    expect(card.getAttribute('data-status')).toBe('running');
    act(() => {
      t.frame({
        type: 'subagent_tool_result',
        task_id: 'plot',
        call_id: 'c1',
        name: 'execute_code',
        output: 'figure',
        ok: true,
        duration_ms: 12
      });
      t.frame({
        type: 'subagent_complete',
        task_id: 'plot',
        result: 'A bar chart of sales by month.'
      });
      t.flush();
    });
    await settle();
    expect(card.getAttribute('data-status')).toBe('complete');
    expect(view.getAttribute('data-status')).toBe('complete');
    expect(el.querySelector('[aria-label="Result"]')?.textContent).toContain(
      'A bar chart of sales by month.'
    );
    // No editing in a subagent's stream.
    expect(
      el.querySelector('[aria-label="Edit and resend this message"]')
    ).toBeNull();
    act(() => {
      click(button(el, 'Back to the chat'));
      t.flush();
    });
    expect(t.model.getDrill()).toBeNull();
  });

  it('after a reload: the stored messages, the instructions folded away', async () => {
    const t = tree();
    t.flush();
    t.facet['subagent:load'] = [
      {
        id: 'p1',
        role: 'user',
        content: '# Task load: Load the CSV\n\n**Instructions** read sales.csv',
        seq: 1
      },
      {
        id: 'a1',
        role: 'assistant',
        content: 'Reading it.',
        tool_calls: [{ id: 'c9', name: 'read_file', input: { path: 'x' } }],
        seq: 2
      },
      {
        id: 't1',
        role: 'tool',
        tool_call_id: 'c9',
        name: 'read_file',
        content: 'a,b\n1,2',
        seq: 3
      },
      { id: 'a2', role: 'assistant', content: 'It has 2 columns.', seq: 4 }
    ];
    t.model.open('load');
    await settle();
    t.flush();
    m = mount(
      <SubagentView
        model={t.model}
        taskId="load"
        rendermime={fakeRendermime()}
        onOpenPath={() => undefined}
      />
    );
    await settle();
    const el = m.container;
    expect(t.api.listMessages).toHaveBeenCalledWith(
      's1',
      null,
      100,
      'subagent:load'
    );
    const prompt = el.querySelector('details.jp-ThinkSubagent-prompt')!;
    expect(prompt.hasAttribute('open')).toBe(false);
    expect(prompt.querySelector('summary')?.textContent).toBe('Instructions');
    expect(el.querySelector('.jp-ThinkMessage.jp-mod-user')).toBeNull();
    expect(
      el.querySelector('.jp-ThinkToolCard')?.getAttribute('data-status')
    ).toBe('complete');
    expect(el.textContent).toContain('It has 2 columns.');
    // The task said its subagent is done: so does the view, with no typing dots.
    expect(
      el.querySelector('.jp-ThinkSubagent')?.getAttribute('data-status')
    ).toBe('complete');
    expect(el.querySelector('.jp-ThinkMessage-typing')).toBeNull();
  });

  it('says why a subagent ended without a result', async () => {
    const t = tree();
    t.frame({
      type: 'subagent_error',
      task_id: 'plot',
      message: 'The subagent ran out of time (120 s).',
      code: 'timeout'
    });
    t.flush();
    m = mount(
      <SubagentView
        model={t.model}
        taskId="plot"
        rendermime={fakeRendermime()}
        onOpenPath={() => undefined}
      />
    );
    await settle();
    const note = m.container.querySelector('.jp-ThinkError')!;
    expect(note.getAttribute('data-code')).toBe('timeout');
    expect(note.textContent).toContain('ran out of time');
    expect(
      m.container
        .querySelector('.jp-ThinkSubagentBadge')
        ?.getAttribute('aria-label')
    ).toBe('Subagent timed out');
  });
});
