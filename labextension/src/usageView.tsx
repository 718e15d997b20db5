/**
 * Usage and compaction views: the session's token and cost badge, the footer of
 * an assistant message, and the marker of compacted messages.
 */

import React, { useState } from 'react';

import type {
  ICompactionState,
  IMessageUsage,
  ISessionUsage
} from './chatState';
import { formatTokens, sessionLine, usageLine } from './longSession';

/** The session's total tokens and estimated cost (header). */
export function UsageBadge(props: {
  usage: ISessionUsage;
}): JSX.Element | null {
  const u = props.usage;
  if (!u.calls) {
    return null;
  }
  const title =
    `${u.calls} model call${u.calls === 1 ? '' : 's'}: ` +
    `${formatTokens(u.tokensIn)} tokens in, ${formatTokens(u.tokensOut)} out` +
    (u.estimated
      ? ` (${u.estimated} estimated: the endpoint reported none)`
      : '') +
    (u.cost === null
      ? '; no price known for these models'
      : u.costComplete
        ? '; cost estimated from list prices'
        : '; some models have no price, the cost is a lower bound');
  return (
    <span
      className="jp-ThinkUsage"
      title={title}
      aria-label={`Usage: ${title}`}
    >
      {sessionLine(u)}
    </span>
  );
}

/** The role, model, tokens and cost of the call that wrote a message. */
export function MessageUsage(props: {
  usage?: IMessageUsage;
}): JSX.Element | null {
  if (!props.usage) {
    return null;
  }
  return (
    <div
      className="jp-ThinkMessage-usage"
      data-role={props.usage.role}
      title={
        props.usage.estimated ? 'estimated: the endpoint reported no usage' : ''
      }
    >
      {usageLine(props.usage)}
    </div>
  );
}

/** "Compacted N messages": expands to the summary the model sees and to the messages. */
export function CompactionMarker(props: {
  compaction: ICompactionState;
  hiddenCount: number;
  children: (open: boolean) => React.ReactNode;
}): JSX.Element {
  const [open, setOpen] = useState(false);
  const c = props.compaction;
  const n = c.count;
  return (
    <div
      className="jp-ThinkCompaction"
      data-compaction-id={c.id}
      data-open={open}
    >
      <button
        className="jp-ThinkCompaction-header"
        aria-expanded={open}
        onClick={() => setOpen(!open)}
        title="Older messages were summarised to fit the model's context window; they are still stored."
      >
        <span className="jp-ThinkCompaction-rule" />
        <span className="jp-ThinkCompaction-label">
          {open ? '▾' : '▸'} Compacted {n} message{n === 1 ? '' : 's'}
          {c.tokensBefore && c.tokensAfter
            ? ` (${formatTokens(c.tokensBefore)} → ${formatTokens(c.tokensAfter)} tokens)`
            : ''}
        </span>
        <span className="jp-ThinkCompaction-rule" />
      </button>
      {open ? (
        <div className="jp-ThinkCompaction-body">
          <div className="jp-ThinkToolCard-label">
            Summary the model sees{c.model ? ` (by ${c.model})` : ''}
          </div>
          <div className="jp-ThinkCompaction-summary">{c.summary}</div>
          {props.hiddenCount ? null : (
            <div className="jp-ThinkMessage-note">
              The compacted messages are on earlier pages: “Show earlier
              messages” loads them.
            </div>
          )}
          {props.children(open)}
        </div>
      ) : null}
    </div>
  );
}
