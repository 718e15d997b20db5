/**
 * A user message's text. `<context>` blocks (what `%%think` and the agent attach: variables,
 * the active notebook) show as a compact "context attached" chip that expands.
 */

import { caretDownIcon, caretRightIcon } from '@jupyterlab/ui-components';
import React, { useState } from 'react';

const CONTEXT = /\n*<context>\n?([\s\S]*?)\n?<\/context>\s*/g;

/** The typed text and the context blocks of a message. */
export function splitContext(content: string): {
  text: string;
  contexts: string[];
} {
  const contexts: string[] = [];
  const text = content.replace(CONTEXT, (_m, inner: string) => {
    contexts.push(inner);
    return '\n';
  });
  return { text: text.trim(), contexts };
}

/** One chip; click to show what was attached. */
function ContextChip({ text }: { text: string }): JSX.Element {
  const [open, setOpen] = useState(false);
  const lines = text.split('\n').length;
  const Caret = open ? caretDownIcon : caretRightIcon;
  return (
    <div className="jp-ThinkContext">
      <button
        className="jp-ThinkContext-chip"
        aria-expanded={open}
        title={open ? 'Hide the attached context' : 'Show the attached context'}
        onClick={() => setOpen(!open)}
      >
        <Caret.react tag="span" />
        Context attached ({lines} line{lines === 1 ? '' : 's'})
      </button>
      {open ? <pre className="jp-ThinkContext-body">{text}</pre> : null}
    </div>
  );
}

/** The message text, then a chip per context block. */
export function UserText({ content }: { content: string }): JSX.Element {
  const { text, contexts } = splitContext(content);
  return (
    <>
      <div className="jp-ThinkMessage-userText">{text}</div>
      {contexts.map((c, i) => (
        <ContextChip key={i} text={c} />
      ))}
    </>
  );
}
