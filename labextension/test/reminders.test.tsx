// @vitest-environment jsdom
import React from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { MessageList } from '../src/messageView';
import { initialState, reduceAll } from '../src/reducer';
import { dueLabel, reminderMark, shownAttachments } from '../src/reminderNote';
import {
  IReminderFrame,
  loadMemory,
  notificationsUrl,
  ReminderNotifier,
  reminderText,
  takeFrame
} from '../src/reminders';
import { fakeRendermime, IMounted, mount, settle } from './render';

const frame: IReminderFrame = {
  type: 'reminder',
  key: 'sch_1:1700000000',
  session_id: 's1',
  session_title: 'Oven',
  message: 'check the oven',
  due_at: 1700000000,
  fired_at: 1700000005,
  late: false
};

class MemoryStorage {
  items = new Map<string, string>();
  getItem(k: string): string | null {
    return this.items.get(k) ?? null;
  }
  setItem(k: string, v: string): void {
    this.items.set(k, v);
  }
}

let m: IMounted | null = null;
afterEach(() => {
  m?.unmount();
  m = null;
});

describe('reminder notifications', () => {
  it('show each firing once and resume after the newest seen', () => {
    let memory = { since: 10, seen: [] as string[] };
    const first = takeFrame(memory, frame as never);
    expect(first.show?.key).toBe(frame.key);
    memory = first.memory;
    expect(memory.since).toBe(1700000005);
    const again = takeFrame(memory, frame as never);
    expect(again.show).toBeNull();
    expect(takeFrame(memory, { type: 'hello' }).memory).toBe(memory);
    expect(takeFrame(memory, { type: 'reminder', key: 3 }).show).toBeNull();
  });

  it('say the session and whether the reminder is late', () => {
    expect(reminderText(frame)).toBe('Reminder (Oven): check the oven');
    expect(reminderText({ ...frame, late: true, session_title: '' })).toBe(
      'Reminder: check the oven — late: it fell due while Jupyter was not running'
    );
  });

  it('connect with since and the token, and remember across reloads', () => {
    expect(
      notificationsUrl({ wsUrl: 'ws://h:1/lab-base/', token: 'a b' }, 12.5)
    ).toBe('ws://h:1/lab-base/api/think/notifications?since=12.5&token=a%20b');
    const storage = new MemoryStorage();
    const fresh = loadMemory(storage, 5000);
    expect(fresh).toEqual({ since: 5000 - 3600, seen: [] });
    storage.setItem('think:reminders', '{"since": "x"}');
    expect(loadMemory(storage, 5000).since).toBe(1400);

    const recent = { ...frame, fired_at: Math.floor(Date.now() / 1000) - 5 };
    const kept = new MemoryStorage();
    const shown: IReminderFrame[] = [];
    const urls: string[] = [];
    let deliver: (f: { type?: unknown }) => void = () => undefined;
    const connect = vi.fn((url: () => string, onFrame) => {
      urls.push(url());
      deliver = onFrame;
      return { dispose: vi.fn() };
    });
    const settings = { wsUrl: 'ws://h/', token: '' };
    const notifier = new ReminderNotifier(
      r => shown.push(r),
      kept,
      settings,
      connect
    );
    deliver({ type: 'hello' });
    deliver(recent);
    deliver(recent); // replayed after a reconnect
    expect(shown.map(r => r.key)).toEqual([frame.key]);
    notifier.dispose();
    // A reload resumes after what it saw, and does not show it again.
    const after = new ReminderNotifier(
      r => shown.push(r),
      kept,
      settings,
      connect
    );
    expect(urls[1]).toBe(
      `ws://h/api/think/notifications?since=${recent.fired_at}`
    );
    deliver(recent);
    expect(shown).toHaveLength(1);
    after.dispose();
  });
});

describe('a reminder in the chat', () => {
  const mark = {
    kind: 'reminder',
    schedule_id: 'sch_1',
    due_at: 1700000000,
    late: true
  };

  it('is marked as a reminder, late, without an attachment chip', async () => {
    expect(reminderMark([mark as never])?.late).toBe(true);
    expect(
      shownAttachments([mark as never, { kind: 'file', name: 'a' }])
    ).toEqual([{ kind: 'file', name: 'a' }]);
    expect(dueLabel(1700000000, new Date(1700000000 * 1000))).toMatch(/^due /);
    const state = reduceAll(initialState({ id: 's', title: 't' }), [
      {
        type: 'history',
        messages: [
          {
            id: 'u1',
            role: 'user',
            content: 'Reminder (set for …): check the oven',
            status: 'complete',
            seq: 1,
            attachments: [mark]
          },
          {
            id: 'u2',
            role: 'user',
            content: 'typed',
            status: 'complete',
            seq: 2
          }
        ]
      } as never
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
    const notes = m.container.querySelectorAll('.jp-ThinkReminderNote');
    expect(notes).toHaveLength(1);
    expect(
      notes[0].closest('[data-message-id]')?.getAttribute('data-message-id')
    ).toBe('u1');
    expect(notes[0].getAttribute('data-late')).toBe('true');
    expect(notes[0].textContent).toContain('late');
    expect(m.container.querySelector('.jp-ThinkAttachment')).toBeNull();
  });
});
