/**
 * Undo on a `remember` card: the line the agent added to the person's memory file, and a
 * button that takes it out again (`POST /api/think/memory/undo`).
 */

import React, { createContext, useContext, useState } from 'react';

import type { IToolCallState } from './chatState';

/** Takes a remembered line out of the memory file; resolves to the line removed. */
export type UndoRemember = (line: string) => Promise<string>;

/** Given by the chat, so a tool card can undo without holding the API itself. */
export const MemoryUndoContext = createContext<UndoRemember | null>(null);

const PREFIX = 'remembered: ';

/** The line a finished `remember` call added (null for any other call). */
export function rememberedLine(call: IToolCallState): string | null {
  if (call.name !== 'remember' || call.status !== 'complete') {
    return null;
  }
  if (call.summary?.startsWith(PREFIX)) {
    return call.summary.slice(PREFIX.length);
  }
  const last = (call.output ?? '').trim().split('\n').pop() ?? '';
  return last.startsWith('- ') ? last : null;
}

/** The remembered line and its Undo button (nothing for other calls). */
export function RememberUndo(props: {
  call: IToolCallState;
}): JSX.Element | null {
  const undo = useContext(MemoryUndoContext);
  const [state, setState] = useState<'idle' | 'busy' | 'done'>('idle');
  const [error, setError] = useState<string | null>(null);
  const line = rememberedLine(props.call);
  if (!undo || !line) {
    return null;
  }
  return (
    <div className="jp-ThinkMemoryUndo">
      <span className="jp-ThinkMemoryUndo-text">
        {state === 'done'
          ? 'Taken out of your memory file: '
          : 'Added to your memory file: '}
        <code>{line}</code>
      </span>
      {state !== 'done' ? (
        <button
          className="jp-ThinkLinkButton"
          disabled={state === 'busy'}
          aria-label={`Undo: take "${line}" out of your memory file`}
          onClick={() => {
            setState('busy');
            setError(null);
            undo(line)
              .then(() => setState('done'))
              .catch(e => {
                setState('idle');
                setError(String(e.message ?? e));
              });
          }}
        >
          Undo
        </button>
      ) : null}
      {error ? (
        <div className="jp-ThinkToolCard-error" role="alert">
          {error}
        </div>
      ) : null}
    </div>
  );
}
