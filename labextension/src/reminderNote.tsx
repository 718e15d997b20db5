/**
 * A reminder's message in the chat: marked as a reminder (when it was due, whether it fired
 * late) rather than as something the user typed.
 */

import React from 'react';

import type { IAttachment } from './tokens';

/** The `reminder` attachment the server puts on a fired reminder's message. */
export interface IReminderMark {
  kind: 'reminder';
  schedule_id?: string;
  key?: string;
  when?: string;
  due_at?: number;
  fired_at?: number;
  late?: boolean;
  recurring?: boolean;
}

/** The reminder mark of a message's attachments, if it has one. */
export function reminderMark(
  items: IAttachment[] | null | undefined
): IReminderMark | null {
  const found = (items ?? []).find(
    a => (a as { kind?: string }).kind === 'reminder'
  );
  return found ? (found as unknown as IReminderMark) : null;
}

/** The attachments to show as chips (a reminder's mark is shown by `ReminderNote`). */
export function shownAttachments(
  items: IAttachment[] | null | undefined
): IAttachment[] | undefined {
  return items?.filter(a => (a as { kind?: string }).kind !== 'reminder');
}

/** "Due 09:00" in the browser's zone, with the date when it is not today. */
export function dueLabel(dueAt: number | undefined, now = new Date()): string {
  if (!dueAt) {
    return '';
  }
  const due = new Date(dueAt * 1000);
  const time = due.toLocaleTimeString([], {
    hour: '2-digit',
    minute: '2-digit'
  });
  return due.toDateString() === now.toDateString()
    ? `due ${time}`
    : `due ${due.toLocaleDateString()} ${time}`;
}

/** The line above a fired reminder's text. */
export function ReminderNote(props: {
  items: IAttachment[] | null | undefined;
}): JSX.Element | null {
  const mark = reminderMark(props.items);
  if (!mark) {
    return null;
  }
  return (
    <div
      className={`jp-ThinkReminderNote${mark.late ? ' jp-mod-late' : ''}`}
      data-late={mark.late ? 'true' : 'false'}
    >
      Reminder
      {mark.recurring ? ' (recurring)' : ''} · {dueLabel(mark.due_at)}
      {mark.late ? ' · late: it fell due while Jupyter was not running' : ''}
    </div>
  );
}
