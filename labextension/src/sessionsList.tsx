/**
 * The session picker: switch, create, rename and delete sessions. Sessions are grouped by
 * kind (the sidebar's chats, think notebooks, `%%think` cells, agents calling Think over MCP)
 * with their notebook path.
 */

import { addIcon, deleteIcon, editIcon } from '@jupyterlab/ui-components';
import React, { useState } from 'react';

import type { ISession, SessionKind } from './tokens';

/** The groups of the picker, in order. */
export const GROUPS: { kind: SessionKind; label: string }[] = [
  { kind: 'chat', label: 'Chats' },
  { kind: 'notebook', label: 'Think notebooks' },
  { kind: 'magic', label: '%%think in notebooks' },
  { kind: 'mcp', label: 'Agents over MCP' }
];

/** A session's kind (sessions from before kinds existed are chats). */
export function kindOf(s: ISession | null | undefined): SessionKind {
  const kind = s?.kind;
  return kind === 'notebook' || kind === 'magic' || kind === 'mcp'
    ? kind
    : 'chat';
}

/** The notebook a session belongs to (none for chats or when the kernel did not know). */
export function notebookOf(s: ISession): string {
  const path = s.path ?? '';
  const kind = kindOf(s);
  return kind !== 'chat' && kind !== 'mcp' && path && !path.startsWith('/')
    ? path
    : '';
}

/** The label of a session in the picker: its title, and its notebook. */
export function sessionLabel(s: ISession): string {
  const title = s.title || 'Untitled';
  const nb = notebookOf(s);
  return nb ? `${title} · ${nb}` : title;
}

/** The session the sidebar opens by default: the remembered chat, else the newest chat;
 * never a notebook's or a `%%think` session (a sidebar message must not go there). */
export function defaultSession(
  sessions: ISession[],
  remembered: string | null
): ISession | null {
  const chats = sessions.filter(s => kindOf(s) === 'chat');
  return chats.find(s => s.id === remembered) ?? chats[0] ?? null;
}

/** Props of the session picker. */
export interface ISessionsListProps {
  sessions: ISession[];
  currentId: string | null;
  onSelect: (id: string) => void;
  onCreate: () => void;
  onRename: (id: string, title: string) => void;
  onDelete: (id: string) => void;
}

/** A select of sessions with new / rename / delete buttons. */
export function SessionsList(props: ISessionsListProps): JSX.Element {
  const { sessions, currentId, onSelect, onCreate, onRename, onDelete } = props;
  const [renaming, setRenaming] = useState(false);
  const [draft, setDraft] = useState('');
  const current = sessions.find(s => s.id === currentId);

  if (renaming && current) {
    const commit = (): void => {
      setRenaming(false);
      const t = draft.trim();
      if (t && t !== current.title) {
        onRename(current.id, t);
      }
    };
    return (
      <div className="jp-ThinkSessions">
        <input
          className="jp-ThinkSessions-rename"
          aria-label="Session title"
          value={draft}
          autoFocus
          onChange={e => setDraft(e.target.value)}
          onBlur={commit}
          onKeyDown={e => {
            if (e.key === 'Enter') {
              commit();
            } else if (e.key === 'Escape') {
              setRenaming(false);
            }
          }}
        />
      </div>
    );
  }

  return (
    <div className="jp-ThinkSessions">
      <select
        className="jp-ThinkSessions-select"
        aria-label="Chat session"
        title={current ? sessionLabel(current) : 'No session'}
        value={currentId ?? ''}
        onChange={e => onSelect(e.target.value)}
      >
        {currentId === null ? <option value="">No session</option> : null}
        {GROUPS.map(g => {
          const members = sessions.filter(s => kindOf(s) === g.kind);
          return members.length ? (
            <optgroup key={g.kind} label={g.label}>
              {members.map(s => (
                <option key={s.id} value={s.id} title={sessionLabel(s)}>
                  {sessionLabel(s)}
                </option>
              ))}
            </optgroup>
          ) : null;
        })}
      </select>
      <button
        className="jp-ThinkIconButton"
        aria-label="New session"
        title="New session"
        onClick={onCreate}
      >
        <addIcon.react tag="span" />
      </button>
      <button
        className="jp-ThinkIconButton"
        aria-label="Rename session"
        title="Rename session"
        disabled={!current}
        onClick={() => {
          setDraft(current?.title ?? '');
          setRenaming(true);
        }}
      >
        <editIcon.react tag="span" />
      </button>
      <button
        className="jp-ThinkIconButton"
        aria-label="Delete session"
        title="Delete session"
        disabled={!current}
        onClick={() => current && onDelete(current.id)}
      >
        <deleteIcon.react tag="span" />
      </button>
    </div>
  );
}
