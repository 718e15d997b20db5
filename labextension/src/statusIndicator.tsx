/**
 * The agent's status (idle / thinking / executing / waiting) and the connection state.
 */

import React from 'react';

import type { IChatState } from './chatState';
import type { AgentStatus } from './tokens';

/** What the badge shows: the agent's status, or `starting` between a send and its run's
 * first status (the kernel may be starting), which used to read "Idle". */
export type BadgeStatus = AgentStatus | 'starting';

const LABELS: Record<BadgeStatus, string> = {
  idle: 'Idle',
  starting: 'Starting…',
  thinking: 'Thinking',
  executing: 'Running tools',
  waiting: 'Waiting',
  running: 'Working'
};

/** The badge's status for a chat state. */
export function badgeStatus(state: IChatState): BadgeStatus {
  if (state.status !== 'idle') {
    return state.status;
  }
  return state.awaitingRun || state.run !== null || state.streamingId !== null
    ? 'starting'
    : 'idle';
}

/** Props of the status indicator. */
export interface IStatusIndicatorProps {
  status: BadgeStatus;
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
