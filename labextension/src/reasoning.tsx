/**
 * Collapsible reasoning of an assistant message.
 */

import React from 'react';

/** Props of the reasoning block. */
export interface IReasoningProps {
  text: string;
  streaming: boolean;
}

/** Reasoning text, collapsed unless the user opens it. */
export const Reasoning = React.memo(function Reasoning({
  text,
  streaming
}: IReasoningProps): JSX.Element | null {
  if (!text) {
    return null;
  }
  return (
    <details className="jp-ThinkReasoning">
      <summary>{streaming ? 'Thinking…' : 'Reasoning'}</summary>
      <div className="jp-ThinkReasoning-text">{text}</div>
    </details>
  );
});
