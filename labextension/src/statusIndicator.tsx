/**
 * The agent's status (idle / thinking / executing / waiting) and the connection state.
 */

import React, { useEffect, useRef, useState } from 'react';

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

// "...; retry 1/3 in 8 s": a detail that ends with a countdown (the server counts down the
// time that passed before a tab connected, so a reloaded tab shows the time that is left).
const RETRY_IN = /in ([0-9.]+) s$/;

/** The detail with its countdown advanced to `now` (ms), counted from `since` (ms). */
export function countDown(detail: string, since: number, now: number): string {
  const match = RETRY_IN.exec(detail);
  if (!match) {
    return detail;
  }
  const left = Math.max(0, Number(match[1]) - (now - since) / 1000);
  return detail.replace(RETRY_IN, `in ${Math.ceil(left)} s`);
}

/** A countdown goes first ("retry 1/3 in 8 s · rate limited by …"): a narrow sidebar cuts
 * the end of the detail, and the time left is what changes. */
export function countdownFirst(detail: string): string {
  const m = /^(.*); (retry [^;]*in [0-9.]+ s)$/s.exec(detail);
  return m ? `${m[2]} · ${m[1]}` : detail;
}

/** The detail as it counts down, re-rendered every second while it has a countdown. */
function useCountdown(detail: string): string {
  const since = useRef({ detail, at: Date.now() });
  if (since.current.detail !== detail) {
    since.current = { detail, at: Date.now() };
  }
  const [, tick] = useState(0);
  const counting = RETRY_IN.test(detail);
  useEffect(() => {
    if (!counting) {
      return;
    }
    const timer = window.setInterval(() => tick(n => n + 1), 1000);
    return () => window.clearInterval(timer);
  }, [detail, counting]);
  return countdownFirst(countDown(detail, since.current.at, Date.now()));
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
  const shown = useCountdown(detail);
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
        // Each second of a countdown is not announced (the region is polite, not a clock).
        <span className="jp-ThinkStatus-detail" aria-live="off">
          {shown}
        </span>
      ) : null}
    </div>
  );
}
