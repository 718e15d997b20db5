/**
 * An error in the chat: rendered Markdown, placed after the message it belongs to, wrapping
 * inside the panel, with the action that fixes it in this sidebar.
 */

import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import React from 'react';

import { Markdown } from './markdown';

/** Error codes the setup card fixes (the endpoint, its key or the model). */
export const SETUP_CODES = new Set([
  'not_configured',
  'auth',
  'permission',
  'model_not_found',
  'connection'
]);

/** Props of an error note. */
export interface IErrorNoteProps {
  message: string;
  code?: string;
  rendermime: IRenderMimeRegistry;
  /** Open the setup card; offered when the error is about the endpoint. */
  onSetup?: () => void;
}

/** The error as Markdown, and "Set up a model" when that is the fix. */
export function ErrorNote(props: IErrorNoteProps): JSX.Element {
  const { message, code, rendermime, onSetup } = props;
  return (
    <div className="jp-ThinkError" role="alert" data-code={code ?? 'error'}>
      <Markdown text={message} rendermime={rendermime} />
      {onSetup && code && SETUP_CODES.has(code) ? (
        <button
          className="jp-Button jp-mod-styled jp-mod-accept jp-ThinkError-setup"
          onClick={onSetup}
        >
          Set up a model
        </button>
      ) : null}
    </div>
  );
}
