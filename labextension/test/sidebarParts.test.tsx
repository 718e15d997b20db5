// @vitest-environment jsdom
import React from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { Composer } from '../src/composer';
import { ErrorNote } from '../src/errorNote';
import { decorateCode } from '../src/markdown';
import { MessageList } from '../src/messageView';
import { initialState, reduceAll } from '../src/reducer';
import {
  defaultSession,
  kindOf,
  SessionsList,
  sessionLabel
} from '../src/sessionsList';
import {
  badgeStatus,
  countDown,
  countdownFirst,
  StatusIndicator
} from '../src/statusIndicator';
import type { ISession } from '../src/tokens';
import { splitContext, UserText } from '../src/userText';
import {
  button,
  click,
  fakeRendermime,
  IMounted,
  key,
  mount,
  settle
} from './render';

let m: IMounted | null = null;
afterEach(() => {
  m?.unmount();
  m = null;
});

const SESSIONS: ISession[] = [
  { id: 'mg', title: 'A %%think cell', kind: 'magic', path: 'work/a.ipynb' },
  { id: 'nb', title: 'Notebook', kind: 'notebook', path: 'b.ipynb' },
  { id: 'c2', title: 'Newest chat', kind: 'chat' },
  { id: 'c1', title: 'Older chat' },
  { id: 'ag', title: 'claude-code', kind: 'mcp', path: '' }
];

describe('sessions', () => {
  it('opens the remembered chat, else the newest chat, never a notebook or magic one', () => {
    expect(defaultSession(SESSIONS, 'c1')?.id).toBe('c1');
    expect(defaultSession(SESSIONS, 'mg')?.id).toBe('c2');
    expect(defaultSession(SESSIONS, null)?.id).toBe('c2');
    expect(defaultSession(SESSIONS.slice(0, 2), null)).toBeNull();
    expect(kindOf(SESSIONS[3])).toBe('chat');
    expect(kindOf(SESSIONS[4])).toBe('mcp');
    expect(defaultSession(SESSIONS.slice(4), null)).toBeNull();
  });

  it('groups the picker by kind with each notebook path, full titles on hover', () => {
    m = mount(
      <SessionsList
        sessions={SESSIONS}
        currentId="mg"
        onSelect={vi.fn()}
        onCreate={vi.fn()}
        onRename={vi.fn()}
        onDelete={vi.fn()}
      />
    );
    const groups = [...m.container.querySelectorAll('optgroup')].map(g => [
      g.label,
      [...g.querySelectorAll('option')].map(o => o.textContent)
    ]);
    expect(groups).toEqual([
      ['Chats', ['Newest chat', 'Older chat']],
      ['Think notebooks', ['Notebook · b.ipynb']],
      ['%%think in notebooks', ['A %%think cell · work/a.ipynb']],
      ['Agents over MCP', ['claude-code']]
    ]);
    const select = m.container.querySelector('select')!;
    expect(select.title).toBe('A %%think cell · work/a.ipynb');
    expect(
      sessionLabel({ id: 'x', title: '', kind: 'notebook', path: '/abs' })
    ).toBe('Untitled');
  });
});

describe('context blocks', () => {
  it('split from the typed text', () => {
    expect(splitContext('plot x\n\n<context>\nx = 1\n</context>')).toEqual({
      text: 'plot x',
      contexts: ['x = 1']
    });
    expect(splitContext('no context')).toEqual({
      text: 'no context',
      contexts: []
    });
  });

  it('show as a chip that expands', () => {
    m = mount(<UserText content={'plot x\n\n<context>\na\nb\n</context>'} />);
    expect(m.container.textContent).not.toContain('<context>');
    const chip = m.container.querySelector('.jp-ThinkContext-chip')!;
    expect(chip.textContent).toContain('Context attached (2 lines)');
    expect(m.container.querySelector('.jp-ThinkContext-body')).toBeNull();
    click(chip);
    expect(
      m.container.querySelector('.jp-ThinkContext-body')?.textContent
    ).toBe('a\nb');
  });
});

describe('status badge', () => {
  it('says Starting between a send and the run first status', () => {
    const idle = initialState({ id: 's', title: 't' });
    expect(badgeStatus(idle)).toBe('idle');
    const sent = reduceAll(idle, [
      { type: 'local/user_message', id: 'l1', content: 'hi' }
    ]);
    expect(badgeStatus(sent)).toBe('starting');
    const thinking = reduceAll(sent, [{ type: 'status', status: 'thinking' }]);
    expect(badgeStatus(thinking)).toBe('thinking');
    m = mount(<StatusIndicator status="starting" detail="" connected />);
    expect(m.container.textContent).toBe('Starting…');
  });

  it('counts a retry down from when it was told', () => {
    const detail = 'rate limited; retry 1/3 in 30 s';
    expect(countDown(detail, 1000, 1000)).toBe(
      'rate limited; retry 1/3 in 30 s'
    );
    expect(countDown(detail, 1000, 13500)).toBe(
      'rate limited; retry 1/3 in 18 s'
    );
    expect(countDown(detail, 1000, 99000)).toBe(
      'rate limited; retry 1/3 in 0 s'
    );
    expect(countDown('approval needed: x', 0, 5000)).toBe('approval needed: x');
    expect(countdownFirst('rate limited; retry 1/3 in 18 s')).toBe(
      'retry 1/3 in 18 s · rate limited'
    );
    expect(countdownFirst('approval needed: x')).toBe('approval needed: x');
  });
});

describe('errors', () => {
  it('render as Markdown, offer the setup card for endpoint errors', async () => {
    const onSetup = vi.fn();
    m = mount(
      <ErrorNote
        message="**Think has no model configured.** Click it."
        code="not_configured"
        rendermime={fakeRendermime()}
        onSetup={onSetup}
      />
    );
    await settle();
    expect(m.container.querySelector('strong')?.textContent).toBe(
      'Think has no model configured.'
    );
    click(button(m.container, 'Set up a model'));
    expect(onSetup).toHaveBeenCalled();
  });

  it('go after the message they belong to, before queued ones', async () => {
    let state = initialState({ id: 's', title: 't' });
    state = reduceAll(state, [
      {
        type: 'history',
        messages: [
          {
            id: 'u1',
            role: 'user',
            content: 'first',
            status: 'complete',
            seq: 1
          },
          { id: 'u2', role: 'user', content: 'later', status: 'queued', seq: 2 }
        ]
      } as never,
      { type: 'error', message: 'it **failed**', code: 'auth' } as never
    ]);
    m = mount(
      <MessageList
        state={state}
        rendermime={fakeRendermime()}
        onOpenPath={vi.fn()}
        onEdit={vi.fn()}
        onLoadOlder={async () => false}
        onSetup={vi.fn()}
      />
    );
    await settle();
    const order = [
      ...m.container.querySelectorAll('.jp-ThinkMessage, .jp-ThinkError')
    ].map(e =>
      e.classList.contains('jp-ThinkError')
        ? 'error'
        : e.getAttribute('data-message-id')
    );
    expect(order).toEqual(['u1', 'error', 'u2']);
    expect(m.container.querySelector('.jp-ThinkBanner')).toBeNull();
  });
});

describe('failure notes', () => {
  it('offer the setup card when the advice names it, also from history', async () => {
    const state = reduceAll(initialState({ id: 's', title: 't' }), [
      {
        type: 'history',
        messages: [
          { id: 'u1', role: 'user', content: 'hi', status: 'complete', seq: 1 },
          {
            id: 'n1',
            role: 'system',
            content:
              'The request failed: the key was refused.\n\nOpen **Set up a model** here.',
            status: 'error',
            seq: 2
          },
          {
            id: 'n2',
            role: 'system',
            content: 'The request failed: disk full',
            status: 'error',
            seq: 3
          }
        ]
      } as never
    ]);
    const onSetup = vi.fn();
    m = mount(
      <MessageList
        state={state}
        rendermime={fakeRendermime()}
        onOpenPath={vi.fn()}
        onEdit={vi.fn()}
        onLoadOlder={async () => false}
        onSetup={onSetup}
      />
    );
    await settle();
    const notes = [...m.container.querySelectorAll('.jp-ThinkError')];
    expect(notes.length).toBe(2);
    expect(notes[0].querySelector('strong')?.textContent).toBe(
      'Set up a model'
    );
    click(button(notes[0] as HTMLElement, 'Set up a model'));
    expect(onSetup).toHaveBeenCalled();
    expect(notes[1].querySelector('button')).toBeNull();
  });
});

describe('composer keys', () => {
  const props = (running: boolean) => ({
    running,
    canRetry: true,
    attach: false,
    context: null,
    onAttachChange: vi.fn(),
    onSend: vi.fn(),
    onStopAndSend: vi.fn(),
    cellsPath: () => null,
    onStop: vi.fn(),
    onRetry: vi.fn(),
    onEditLast: vi.fn()
  });

  it('Escape stops a run; Up in an empty composer edits the last message', () => {
    const p = props(true);
    m = mount(<Composer {...p} />);
    const input = m.container.querySelector('textarea')!;
    key(input, 'Escape');
    expect(p.onStop).toHaveBeenCalledTimes(1);
    m.unmount();
    const q = props(false);
    m = mount(<Composer {...q} />);
    key(m.container.querySelector('textarea')!, 'ArrowUp');
    expect(q.onEditLast).toHaveBeenCalledTimes(1);
    expect(q.onStop).not.toHaveBeenCalled();
  });

  it('labels Retry', () => {
    const p = props(false);
    m = mount(<Composer {...p} />);
    const retry = button(m.container, 'Retry the last message');
    expect(retry.textContent).toBe('Retry');
    click(retry);
    expect(p.onRetry).toHaveBeenCalled();
  });
});

describe('code blocks', () => {
  it('get Copy and Insert below; insert receives the code', () => {
    const node = document.createElement('div');
    node.innerHTML = '<p>x</p><pre><code>print(1)\n</code></pre>';
    const insert = vi.fn();
    decorateCode(node, insert);
    decorateCode(node, insert); // idempotent across re-renders
    expect(node.querySelectorAll('.jp-ThinkCode-actions').length).toBe(1);
    const labels = [...node.querySelectorAll('button')].map(b => b.textContent);
    expect(labels).toEqual(['Copy', 'Insert below']);
    click(node.querySelector('.jp-ThinkCode-insert')!);
    expect(insert).toHaveBeenCalledWith('print(1)');
  });
});
