/**
 * The input box: Enter sends, Shift+Enter adds a line; stop and retry; attach context.
 *
 * While a run is in flight a message can still be sent: it is queued behind the run
 * ("Queue", or Enter), or sent at once after stopping the run ("Stop & send").
 */

import { refreshIcon } from '@jupyterlab/ui-components';
import React, { useState } from 'react';

/** Props of the composer. */
export interface IComposerProps {
  running: boolean;
  canRetry: boolean;
  attach: boolean;
  contextLabel: string | null;
  onAttachChange: (attach: boolean) => void;
  onSend: (text: string) => void;
  onStopAndSend: (text: string) => void;
  onStop: () => void;
  onRetry: () => void;
}

/** The message input and its buttons. */
export function Composer(props: IComposerProps): JSX.Element {
  const { running, canRetry, attach, contextLabel } = props;
  const [text, setText] = useState('');
  const send = (): void => {
    if (!text.trim()) {
      return;
    }
    props.onSend(text); // queued behind the run in flight, if there is one
    setText('');
  };
  const stopAndSend = (): void => {
    if (!text.trim()) {
      return;
    }
    props.onStopAndSend(text);
    setText('');
  };
  return (
    <div className="jp-ThinkComposer">
      <textarea
        className="jp-ThinkComposer-input"
        aria-label="Message to Think"
        placeholder="Ask Think… (Enter to send, Shift+Enter for a new line)"
        rows={3}
        value={text}
        onChange={e => setText(e.target.value)}
        onKeyDown={e => {
          if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault();
            send();
          }
        }}
      />
      <div className="jp-ThinkComposer-bar">
        <label
          className="jp-ThinkComposer-attach"
          title={contextLabel ?? 'No active notebook or file'}
        >
          <input
            type="checkbox"
            checked={attach}
            onChange={e => props.onAttachChange(e.target.checked)}
          />
          <span>
            Attach{' '}
            {contextLabel ? (
              <code>{contextLabel.split('/').pop()}</code>
            ) : (
              'active file'
            )}
          </span>
        </label>
        <span className="jp-ThinkComposer-spacer" />
        {canRetry && !running ? (
          <button
            className="jp-ThinkIconButton"
            aria-label="Retry the last message"
            title="Retry"
            onClick={props.onRetry}
          >
            <refreshIcon.react tag="span" />
          </button>
        ) : null}
        {running ? (
          <button
            className="jp-Button jp-mod-styled jp-mod-warn jp-ThinkComposer-stop"
            aria-label="Stop"
            title="Stop"
            onClick={props.onStop}
          >
            Stop
          </button>
        ) : null}
        {running && text.trim() ? (
          <>
            <button
              className="jp-Button jp-mod-styled jp-mod-warn jp-ThinkComposer-stopSend"
              aria-label="Stop and send"
              title="Stop the current request and send this message now"
              onClick={stopAndSend}
            >
              Stop &amp; send
            </button>
            <button
              className="jp-Button jp-mod-styled jp-mod-accept jp-ThinkComposer-queue"
              aria-label="Queue"
              title="Send when the current request ends (Enter)"
              onClick={send}
            >
              Queue
            </button>
          </>
        ) : running ? null : (
          <button
            className="jp-Button jp-mod-styled jp-mod-accept jp-ThinkComposer-send"
            aria-label="Send"
            title="Send (Enter)"
            disabled={!text.trim()}
            onClick={send}
          >
            Send
          </button>
        )}
      </div>
    </div>
  );
}
