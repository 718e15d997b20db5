/**
 * One message of the chat: a user message with its edit, rewind and version controls, a
 * run's failure note, or an answer with its reasoning, text and tool calls.
 */

import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { editIcon } from '@jupyterlab/ui-components';
import React, { useEffect, useState } from 'react';

import { SentAttachments } from './attachmentBar';
import type { ISiblings } from './branches';
import { ErrorNote } from './errorNote';
import { Markdown } from './markdown';
import { Reasoning } from './reasoning';
import type { IChatMessage, IToolCallState } from './reducer';
import { ReminderNote, shownAttachments } from './reminderNote';
import { BranchSwitcher, RewindControl, type RestoreWhat } from './rewind';
import { ToolCard } from './toolCard';
import { MessageUsage } from './usageView';
import { UserText } from './userText';

/** Props of one message. */
export interface IMessageItemProps {
  message: IChatMessage;
  tools: IToolCallState[];
  rendermime: IRenderMimeRegistry;
  onOpenPath: (path: string) => void;
  onEdit?: (messageId: string, content: string) => void;
  editable: boolean;
  /** Fetch the whole output of a tool call (its stored tool message). */
  loadWhole?: (resultId: string) => Promise<string>;
  /** Open the setup card (offered on errors about the endpoint). */
  onSetup?: () => void;
  /** Put a code block of an answer in a new cell below the active one. */
  onInsertCode?: (code: string) => void;
  /** Changes (to a new positive number) to open this message's editor (Up key). */
  editNow?: number;
  /** The other versions of this message (on other branches), if any. */
  siblings?: ISiblings;
  onShowSibling?: (siblings: ISiblings, index: number, files: boolean) => void;
  /** Offer "Rewind" on this (user) message. */
  onRewind?: (messageId: string, what: RestoreWhat) => void;
}

/** A stored failure note has no error code (also after a reload); the kernel's advice for
 * the chat names the setup card in bold (think_kernel/config.py), which marks it. */
function setupCode(text: string): string | undefined {
  return text.includes('**Set up a model**') ? 'not_configured' : undefined;
}

function sameTools(a: IToolCallState[], b: IToolCallState[]): boolean {
  return a.length === b.length && a.every((t, i) => t === b[i]);
}

/** One message; re-renders only when it or one of its tool calls changes. */
export const MessageItem = React.memo(
  function MessageItem(props: IMessageItemProps): JSX.Element {
    const {
      message: m,
      tools,
      rendermime,
      onOpenPath,
      onEdit,
      editable,
      loadWhole,
      onSetup,
      onInsertCode,
      editNow,
      siblings,
      onShowSibling,
      onRewind
    } = props;
    const [editing, setEditing] = useState(false);
    const [draft, setDraft] = useState(m.content);
    useEffect(() => {
      if (editNow && editable && onEdit) {
        setDraft(m.content);
        setEditing(true);
      }
    }, [editNow]);
    const streaming = m.status === 'streaming';
    const cls = `jp-ThinkMessage jp-mod-${m.role} jp-mod-${m.status}`;
    if (m.role === 'user') {
      return (
        <div
          className={editing ? `${cls} jp-mod-editing` : cls}
          data-message-id={m.id}
          data-status={m.status}
        >
          {editing ? (
            <div className="jp-ThinkEdit">
              <textarea
                className="jp-ThinkEdit-input"
                aria-label="Edit message"
                value={draft}
                autoFocus
                onChange={e => setDraft(e.target.value)}
                onKeyDown={e => {
                  if (e.key === 'Enter' && !e.shiftKey) {
                    e.preventDefault();
                    setEditing(false);
                    onEdit?.(m.id, draft);
                  } else if (e.key === 'Escape') {
                    setEditing(false);
                  }
                }}
              />
              <div className="jp-ThinkEdit-buttons">
                <button
                  className="jp-Button jp-mod-styled jp-mod-accept"
                  onClick={() => {
                    setEditing(false);
                    onEdit?.(m.id, draft);
                  }}
                >
                  Save and resend
                </button>
                <button
                  className="jp-Button jp-mod-styled jp-mod-reject"
                  onClick={() => setEditing(false)}
                >
                  Cancel
                </button>
              </div>
            </div>
          ) : (
            <>
              <ReminderNote items={m.attachments} />
              <UserText content={m.content} />
              <SentAttachments items={shownAttachments(m.attachments)} />
              {editable && onEdit ? (
                <button
                  className="jp-ThinkLabelButton jp-ThinkMessage-edit"
                  aria-label="Edit and resend this message"
                  title="Edit this message and send it again (Up in an empty composer)"
                  onClick={() => {
                    setDraft(m.content);
                    setEditing(true);
                  }}
                >
                  <editIcon.react tag="span" />
                  <span>Edit</span>
                </button>
              ) : null}
              {onRewind ? (
                <RewindControl onRewind={what => onRewind(m.id, what)} />
              ) : null}
              {siblings && onShowSibling ? (
                <BranchSwitcher
                  siblings={siblings}
                  disabled={!editable}
                  onShow={(i, files) => onShowSibling(siblings, i, files)}
                />
              ) : null}
            </>
          )}
          {m.status === 'error' ? (
            <div className="jp-ThinkMessage-error">
              Not sent: {m.error ?? 'error'}
            </div>
          ) : null}
          {m.status === 'queued' ? (
            <div className="jp-ThinkMessage-note jp-ThinkMessage-queued">
              Queued: runs when the current request ends.
            </div>
          ) : null}
          {m.status === 'cancelled' ? (
            <div className="jp-ThinkMessage-note">Cancelled before it ran.</div>
          ) : null}
        </div>
      );
    }
    if (m.role === 'system') {
      // The server's note of a run that failed: its reason stays in the chat.
      return (
        <div className={cls} data-message-id={m.id} data-status={m.status}>
          <ErrorNote
            message={m.content || m.error || 'The request failed.'}
            code={m.errorCode ?? setupCode(m.content || m.error || '')}
            rendermime={rendermime}
            onSetup={onSetup}
          />
        </div>
      );
    }
    return (
      <div className={cls} data-message-id={m.id} data-status={m.status}>
        <Reasoning
          text={m.reasoning}
          streaming={streaming && !m.content && !tools.length}
        />
        {m.content ? (
          <Markdown
            text={m.content}
            rendermime={rendermime}
            onOpenPath={onOpenPath}
            onInsertCode={onInsertCode}
            codeActions
          />
        ) : null}
        {tools.map(t => (
          <ToolCard key={t.id} call={t} loadWhole={loadWhole} />
        ))}
        {streaming && !m.content && !m.reasoning && !tools.length ? (
          <div
            className="jp-ThinkMessage-typing"
            aria-label="Waiting for reply"
          >
            <span />
            <span />
            <span />
          </div>
        ) : null}
        {m.status === 'error' && m.error ? (
          <ErrorNote
            message={m.error}
            code={m.errorCode}
            rendermime={rendermime}
            onSetup={onSetup}
          />
        ) : null}
        {m.status === 'cancelled' ? (
          <div className="jp-ThinkMessage-note">Stopped.</div>
        ) : null}
        <MessageUsage usage={m.usage} />
      </div>
    );
  },
  (a, b) =>
    a.message === b.message &&
    sameTools(a.tools, b.tools) &&
    a.editable === b.editable &&
    a.rendermime === b.rendermime &&
    a.editNow === b.editNow &&
    a.siblings === b.siblings &&
    a.onShowSibling === b.onShowSibling &&
    a.onRewind === b.onRewind
);
