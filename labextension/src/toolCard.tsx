/**
 * A card per tool call: name, arguments, live status and output, duration, result preview,
 * the images a tool returned (browser screenshots), and the decision of its approval.
 */

import React, { useState } from 'react';

import { DecidedApproval, useDecidedApproval } from './approvalCards';
import { OpenAppButton } from './appsView';
import { AnsweredQuestion, useAnsweredQuestion } from './questionCards';
import { formatDuration, summariseInput } from './format';
import { RememberUndo } from './memoryUndo';
import type { IToolCallState } from './reducer';
import { storedToolImages, ToolImages, toolImages } from './toolImages';
import {
  argumentRows,
  subagentRecords,
  toolStatusView,
  type ISubagentRecord
} from './toolView';

const PREVIEW_CHARS = 2000;

/** The arguments as "name: value" rows (JSON only for nested values). */
function Arguments(props: { input: unknown }): JSX.Element {
  const rows = argumentRows(props.input);
  if (!rows) {
    return (
      <pre className="jp-ThinkToolCard-pre">
        {typeof props.input === 'string'
          ? props.input
          : JSON.stringify(props.input, null, 2)}
      </pre>
    );
  }
  return (
    <dl className="jp-ThinkToolCard-args-list">
      {rows.map(r => (
        <React.Fragment key={r.name}>
          <dt>{r.name}</dt>
          <dd>
            {r.block ? (
              <pre className="jp-ThinkToolCard-pre">{r.value}</pre>
            ) : (
              r.value
            )}
          </dd>
        </React.Fragment>
      ))}
    </dl>
  );
}

/** The subagents a report names, one record each. */
function SubagentRecords(props: { items: ISubagentRecord[] }): JSX.Element {
  return (
    <ul className="jp-ThinkToolCard-records">
      {props.items.map(r => (
        <li key={r.taskId} data-status={r.status}>
          <div>
            <b>{r.title || r.taskId}</b>{' '}
            <span className="jp-ThinkToolCard-recordStatus">{r.status}</span>
          </div>
          {r.detail ? (
            <div className="jp-ThinkToolCard-recordDetail">{r.detail}</div>
          ) : null}
          {r.result ? (
            <div className="jp-ThinkToolCard-recordText">{r.result}</div>
          ) : null}
          {r.error ? (
            <div className="jp-ThinkToolCard-error">{r.error}</div>
          ) : null}
        </li>
      ))}
    </ul>
  );
}

/** Props of a tool card. */
export interface IToolCardProps {
  call: IToolCallState;
  /** Fetch the whole stored output (when the model saw only a summary of it). */
  loadWhole?: (resultId: string) => Promise<string>;
}

/** One tool call; click the header to expand arguments and output. */
export const ToolCard = React.memo(function ToolCard({
  call,
  loadWhole
}: IToolCardProps): JSX.Element {
  const [open, setOpen] = useState(false);
  const [full, setFull] = useState(false);
  const [whole, setWhole] = useState<string | null>(null);
  const [wholeError, setWholeError] = useState<string | null>(null);
  const approval = useDecidedApproval(call.id);
  const question = useAnsweredQuestion(call.id);
  // Approved with edited arguments: those ran, so the card shows them.
  const input = approval?.status === 'approved' ? approval.input : call.input;
  const args = summariseInput(input);
  const status = toolStatusView(call);
  const records = subagentRecords(call.name, call.output);
  const live = toolImages(call.display);
  // Live bundles while the run streams; after a reload, the images the store keeps.
  const images = live.length ? live : storedToolImages(call.storedImages);
  const output = whole ?? call.output ?? '';
  const canLoadWhole =
    !!call.fullSize && !!call.resultId && !!loadWhole && whole === null;
  const shown =
    full || output.length <= PREVIEW_CHARS
      ? output
      : output.slice(0, PREVIEW_CHARS) + '\n…';
  return (
    <div
      className={`jp-ThinkToolCard jp-mod-${status.kind}`}
      data-tool-call-id={call.id}
      data-status={call.status}
    >
      <button
        className="jp-ThinkToolCard-header"
        onClick={() => setOpen(!open)}
        aria-expanded={open}
        aria-label={`Tool ${call.name}, ${status.label}. Show details`}
      >
        <span className={`jp-ThinkToolCard-dot jp-mod-${status.kind}`} />
        <span className="jp-ThinkToolCard-name">{call.name}</span>
        <span className="jp-ThinkToolCard-args" title={args}>
          {args}
        </span>
        <span className="jp-ThinkToolCard-status">
          {status.label}
          {call.durationMs !== undefined
            ? ` · ${formatDuration(call.durationMs)}`
            : ''}
        </span>
      </button>
      {approval ? <DecidedApproval approval={approval} /> : null}
      {question ? <AnsweredQuestion question={question} /> : null}
      <ToolImages images={images} />
      <RememberUndo call={call} />
      <OpenAppButton call={call} />
      {status.kind === 'error' && !open && call.summary ? (
        <div className="jp-ThinkToolCard-error">{call.summary}</div>
      ) : null}
      {open ? (
        <div className="jp-ThinkToolCard-body">
          <div className="jp-ThinkToolCard-label">Arguments</div>
          <Arguments input={input} />
          {call.progress && call.status === 'running' ? (
            <>
              <div className="jp-ThinkToolCard-label">Output so far</div>
              <pre className="jp-ThinkToolCard-pre">{call.progress}</pre>
            </>
          ) : null}
          {call.output !== undefined ? (
            <>
              <div className="jp-ThinkToolCard-label">
                {status.kind === 'error' ? 'Error' : 'Result'}
                {call.summary ? ` (${call.summary})` : ''}
              </div>
              {records && whole === null ? (
                <SubagentRecords items={records} />
              ) : (
                <pre className="jp-ThinkToolCard-pre jp-ThinkToolCard-output">
                  {shown}
                </pre>
              )}
              {output.length > PREVIEW_CHARS && !records ? (
                <button
                  className="jp-ThinkLinkButton"
                  onClick={() => setFull(!full)}
                >
                  {full ? 'Show less' : `Show all (${output.length} chars)`}
                </button>
              ) : null}
              {canLoadWhole ? (
                <button
                  className="jp-ThinkLinkButton jp-ThinkToolCard-whole"
                  title="The model saw a summary and excerpts; the whole output is stored."
                  onClick={() => {
                    setWholeError(null);
                    loadWhole!(call.resultId!)
                      .then(text => {
                        setWhole(text);
                        setFull(true);
                      })
                      .catch(e => setWholeError(String(e)));
                  }}
                >
                  Show the whole output ({call.fullSize!.toLocaleString()}{' '}
                  chars)
                </button>
              ) : null}
              {wholeError ? (
                <div className="jp-ThinkToolCard-error">{wholeError}</div>
              ) : null}
            </>
          ) : null}
        </div>
      ) : call.status === 'running' && call.progress ? (
        <pre className="jp-ThinkToolCard-pre jp-ThinkToolCard-tail">
          {call.progress.split('\n').slice(-4).join('\n')}
        </pre>
      ) : null}
    </div>
  );
});
