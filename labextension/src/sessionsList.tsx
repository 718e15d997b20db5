/**
 * The session picker: switch, create, rename and delete chat sessions.
 */

import { addIcon, deleteIcon, editIcon } from '@jupyterlab/ui-components';
import React, { useState } from 'react';

import type { ISession } from './tokens';

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
        value={currentId ?? ''}
        onChange={e => onSelect(e.target.value)}
      >
        {currentId === null ? <option value="">No session</option> : null}
        {sessions.map(s => (
          <option key={s.id} value={s.id}>
            {s.title || 'Untitled'}
          </option>
        ))}
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
