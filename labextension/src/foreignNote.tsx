/**
 * The note shown instead of the composer on a session the sidebar does not write to: a
 * notebook's, `%%think` cells' or an MCP client's.
 */

import React from 'react';

import { notebookOf } from './sessionsList';
import type { ISession, SessionKind } from './tokens';

/** Props of the note. */
export interface IForeignNoteProps {
  session: ISession;
  kind: SessionKind;
  onNewChat: () => void;
  onOpenPath: (path: string) => void;
}

/** Where a session that is not a sidebar chat continues, and a way to a new chat. */
export function ForeignNote(props: IForeignNoteProps): JSX.Element {
  const { session, kind: chatKind, onOpenPath: openPath } = props;
  const notebook = notebookOf(session);
  return (
    <div className="jp-ThinkForeign" role="note">
      {chatKind === 'mcp' ? (
        <>
          This session logs the calls of <b>{session.title}</b>, an agent using
          Think over MCP (its approvals wait here). You can{' '}
          <button className="jp-ThinkLinkButton" onClick={props.onNewChat}>
            start a new chat
          </button>
          .
        </>
      ) : (
        <>
          {chatKind === 'magic' ? (
            <>
              This session belongs to <code>%%think</code> cells
            </>
          ) : (
            'This session belongs to a Think notebook'
          )}
          {notebook ? (
            <>
              {' '}
              in{' '}
              <button
                className="jp-ThinkLinkButton"
                onClick={() => openPath(notebook)}
              >
                {notebook}
              </button>
            </>
          ) : null}
          : continue it there, or{' '}
          <button className="jp-ThinkLinkButton" onClick={props.onNewChat}>
            start a new chat
          </button>
          .
        </>
      )}
    </div>
  );
}
