/**
 * The agent's status (idle / thinking / executing / waiting) and the connection state.
 */

import React from 'react';

import type { AgentStatus } from './tokens';

const LABELS: Record<AgentStatus, string> = {
  idle: 'Idle',
  thinking: 'Thinking',
  executing: 'Running tools',
  waiting: 'Waiting',
  running: 'Working'
};

/** Props of the status indicator. */
export interface IStatusIndicatorProps {
  status: AgentStatus;
  detail: string;
  connected: boolean;
}

/** A dot and a label, announced to screen readers when it changes. */
export function StatusIndicator({
  status,
  detail,
  connected
}: IStatusIndicatorProps): JSX.Element {
  const state = connected ? status : 'offline';
  const label = connected ? (LABELS[status] ?? status) : 'Reconnecting…';
  return (
    <div
      className={`jp-ThinkStatus jp-mod-${state}`}
      role="status"
      aria-live="polite"
      data-status={state}
      title={detail || label}
    >
      <span className="jp-ThinkStatus-dot" />
      <span className="jp-ThinkStatus-label">{label}</span>
      {detail && connected ? (
        <span className="jp-ThinkStatus-detail">{detail}</span>
      ) : null}
    </div>
  );
}
