/**
 * The debug events view: every raw frame of the session, newest last (a setting).
 */

import React, { useState } from 'react';

import type { IDebugEvent } from './store';

const SHOWN = 200;

/** Props of the debug view. */
export interface IDebugEventsProps {
  events: readonly IDebugEvent[];
}

/** A filterable list of raw WebSocket frames. */
export function DebugEvents({ events }: IDebugEventsProps): JSX.Element {
  const [filter, setFilter] = useState('');
  const shown = events
    .filter(e => !filter || e.frame.type.includes(filter))
    .slice(-SHOWN);
  return (
    <div className="jp-ThinkDebug">
      <input
        className="jp-ThinkDebug-filter"
        aria-label="Filter events by type"
        placeholder="Filter by type (e.g. tool_)"
        value={filter}
        onChange={e => setFilter(e.target.value)}
      />
      <div className="jp-ThinkDebug-list">
        {shown.map((e, i) => (
          <div key={i} className="jp-ThinkDebug-row">
            <span className="jp-ThinkDebug-time">
              {new Date(e.at).toISOString().slice(11, 23)}
            </span>
            <span className="jp-ThinkDebug-type">{e.frame.type}</span>
            <code className="jp-ThinkDebug-json">
              {JSON.stringify(e.frame).slice(0, 400)}
            </code>
          </div>
        ))}
        {shown.length === 0 ? (
          <div className="jp-ThinkMessages-empty">No events yet.</div>
        ) : null}
      </div>
    </div>
  );
}
