/**
 * A card per tool call: name, arguments, live status and output, duration, result preview,
 * and the images a tool returned (browser screenshots).
 */

import React, { useState } from 'react';

import { formatDuration, summariseInput } from './format';
import type { IToolCallState } from './reducer';
import { storedToolImages, ToolImages, toolImages } from './toolImages';

const PREVIEW_CHARS = 2000;

const STATUS_LABEL: Record<IToolCallState['status'], string> = {
  running: 'running',
  complete: 'done',
  error: 'failed',
  cancelled: 'stopped'
};

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
  const args = summariseInput(call.input);
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
      className={`jp-ThinkToolCard jp-mod-${call.status}`}
      data-tool-call-id={call.id}
      data-status={call.status}
    >
      <button
        className="jp-ThinkToolCard-header"
        onClick={() => setOpen(!open)}
        aria-expanded={open}
        aria-label={`Tool ${call.name}, ${STATUS_LABEL[call.status]}. Show details`}
      >
        <span className={`jp-ThinkToolCard-dot jp-mod-${call.status}`} />
        <span className="jp-ThinkToolCard-name">{call.name}</span>
        <span className="jp-ThinkToolCard-args" title={args}>
          {args}
        </span>
        <span className="jp-ThinkToolCard-status">
          {STATUS_LABEL[call.status]}
          {call.durationMs !== undefined
            ? ` · ${formatDuration(call.durationMs)}`
            : ''}
        </span>
      </button>
      <ToolImages images={images} />
      {call.status === 'error' && !open && call.summary ? (
        <div className="jp-ThinkToolCard-error">{call.summary}</div>
      ) : null}
      {open ? (
        <div className="jp-ThinkToolCard-body">
          <div className="jp-ThinkToolCard-label">Arguments</div>
          <pre className="jp-ThinkToolCard-pre">
            {typeof call.input === 'string'
              ? call.input
              : JSON.stringify(call.input, null, 2)}
          </pre>
          {call.progress && call.status === 'running' ? (
            <>
              <div className="jp-ThinkToolCard-label">Output so far</div>
              <pre className="jp-ThinkToolCard-pre">{call.progress}</pre>
            </>
          ) : null}
          {call.output !== undefined ? (
            <>
              <div className="jp-ThinkToolCard-label">
                {call.status === 'error' ? 'Error' : 'Result'}
                {call.summary ? ` (${call.summary})` : ''}
              </div>
              <pre className="jp-ThinkToolCard-pre jp-ThinkToolCard-output">
                {shown}
              </pre>
              {output.length > PREVIEW_CHARS ? (
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
