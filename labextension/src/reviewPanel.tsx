/**
 * The proposal in the chat sidebar: each file with its diff, Accept / Reject per hunk, per
 * notebook cell, per file and for all; conflicts of the last decision next to what they
 * are about. Drawn from a `ReviewModel` (review.ts); nothing shows while the session has
 * no proposal and review mode is off.
 */

import { codeCheckIcon } from '@jupyterlab/ui-components';
import React, { useSyncExternalStore } from 'react';

import {
  changeCount,
  diffLines,
  type Choice,
  type IConflict,
  type IProposalCell,
  type IProposalFile,
  type IProposalHunk,
  type ReviewModel
} from './review';

/** A unified diff, line by line, `+` and `-` lines marked. */
export function DiffView(props: {
  diff: string;
  headers?: boolean;
}): JSX.Element {
  return (
    <pre className="jp-ThinkReview-diff">
      {diffLines(props.diff, props.headers ?? true).map((l, i) => (
        <span key={i} className="jp-ThinkReview-line" data-kind={l.kind}>
          {l.text}
          {'\n'}
        </span>
      ))}
    </pre>
  );
}

/** Accept and Reject buttons for one change, named after what they decide. */
function Decide(props: {
  what: string;
  disabled: boolean;
  onDecide: (accept: boolean) => void;
}): JSX.Element {
  return (
    <span className="jp-ThinkReview-decide">
      <button
        className="jp-Button jp-mod-styled jp-mod-accept jp-ThinkReview-accept"
        aria-label={`Accept ${props.what}`}
        title={`Accept ${props.what}`}
        disabled={props.disabled}
        onClick={() => props.onDecide(true)}
      >
        Accept
      </button>
      <button
        className="jp-Button jp-mod-styled jp-mod-reject jp-ThinkReview-reject"
        aria-label={`Reject ${props.what}`}
        title={`Reject ${props.what}`}
        disabled={props.disabled}
        onClick={() => props.onDecide(false)}
      >
        Reject
      </button>
    </span>
  );
}

/** The conflicts about `id` (a file's also lists its cells' and hunks'). */
function Conflicts(props: { items: IConflict[] }): JSX.Element | null {
  if (!props.items.length) {
    return null;
  }
  return (
    <ul className="jp-ThinkReview-conflicts" role="alert">
      {props.items.map(c => (
        <li key={c.id} className="jp-ThinkReview-conflict" data-id={c.id}>
          Conflict: {c.detail}
        </li>
      ))}
    </ul>
  );
}

/** What a cell's change is called in button names: `cell 2 of a.ipynb`. */
export function cellName(path: string, cell: IProposalCell): string {
  return `cell ${cell.index + 1} of ${path}`;
}

function CellView(props: {
  file: IProposalFile;
  cell: IProposalCell;
  busy: boolean;
  conflicts: IConflict[];
  decide: (accept: Choice, reject: Choice) => void;
}): JSX.Element {
  const { file, cell } = props;
  const text =
    cell.source_diff ||
    (cell.status === 'removed' ? cell.base_source : cell.source) ||
    '';
  return (
    <li
      className="jp-ThinkReview-cell"
      data-status={cell.status}
      data-id={cell.id}
    >
      <div className="jp-ThinkReview-row">
        <span className="jp-ThinkReview-what">
          Cell {cell.index + 1} ({cell.cell_type}): {cell.status}
          {cell.outputs_changed ? (
            <span
              className="jp-ThinkReview-outputs"
              title="The cell's outputs changed too"
            >
              {' '}
              · outputs changed
            </span>
          ) : null}
        </span>
        <Decide
          what={cellName(file.path, cell)}
          disabled={props.busy}
          onDecide={a => props.decide(a ? [cell.id] : [], a ? [] : [cell.id])}
        />
      </div>
      {cell.source_diff ? (
        <DiffView diff={text} headers={false} />
      ) : (
        <pre className="jp-ThinkReview-source">{text}</pre>
      )}
      <Conflicts items={props.conflicts.filter(c => c.id === cell.id)} />
    </li>
  );
}

function HunkView(props: {
  file: IProposalFile;
  hunk: IProposalHunk;
  n: number;
  busy: boolean;
  conflicts: IConflict[];
  decide: (accept: Choice, reject: Choice) => void;
}): JSX.Element {
  const { file, hunk } = props;
  return (
    <li className="jp-ThinkReview-hunk" data-id={hunk.id}>
      <div className="jp-ThinkReview-row">
        <span className="jp-ThinkReview-what">{hunk.header}</span>
        <Decide
          what={`hunk ${props.n} of ${file.path}`}
          disabled={props.busy}
          onDecide={a => props.decide(a ? [hunk.id] : [], a ? [] : [hunk.id])}
        />
      </div>
      <DiffView diff={hunk.lines.join('\n')} />
      <Conflicts items={props.conflicts.filter(c => c.id === hunk.id)} />
    </li>
  );
}

function FileView(props: {
  file: IProposalFile;
  busy: boolean;
  conflicts: IConflict[];
  decide: (accept: Choice, reject: Choice) => void;
}): JSX.Element {
  const { file, busy, decide } = props;
  const mine = props.conflicts.filter(
    c => c.path === file.path || c.id.startsWith(`${file.path}::`)
  );
  const own = mine.filter(
    c =>
      !file.cells?.some(x => x.id === c.id) &&
      !file.hunks.some(h => h.id === c.id)
  );
  return (
    <li
      className="jp-ThinkReview-file"
      data-path={file.path}
      data-status={file.status}
    >
      <div className="jp-ThinkReview-row jp-ThinkReview-fileRow">
        <span className="jp-ThinkReview-path" title={file.path}>
          {file.path}
        </span>
        <span className="jp-ThinkReview-status">{file.status}</span>
        <Decide
          what={file.path}
          disabled={busy}
          onDecide={a => decide(a ? [file.path] : [], a ? [] : [file.path])}
        />
      </div>
      {file.missing ? (
        <div className="jp-ThinkReview-missing" role="note">
          The live file was deleted or renamed since the agent read it.
        </div>
      ) : null}
      <Conflicts items={own} />
      {file.kind === 'notebook' && file.cells?.length ? (
        <ul className="jp-ThinkReview-cells">
          {file.cells.map(cell => (
            <CellView
              key={cell.id}
              file={file}
              cell={cell}
              busy={busy}
              conflicts={mine}
              decide={decide}
            />
          ))}
        </ul>
      ) : file.hunks.length ? (
        <ul className="jp-ThinkReview-hunks">
          {file.hunks.map((h, i) => (
            <HunkView
              key={h.id}
              file={file}
              hunk={h}
              n={i + 1}
              busy={busy}
              conflicts={mine}
              decide={decide}
            />
          ))}
        </ul>
      ) : file.diff ? (
        <DiffView diff={file.diff} />
      ) : null}
    </li>
  );
}

const NO_SUBSCRIBE = (): (() => void) => () => undefined;
const NO_SNAPSHOT = (): null => null;

/** Whether the session's review mode is on: the proposal's word, else the session's. */
export function useReviewOn(
  model: ReviewModel | undefined,
  sessionReview: boolean
): boolean {
  const snap = useSyncExternalStore(
    model?.subscribe ?? NO_SUBSCRIBE,
    model?.getSnapshot ?? NO_SNAPSHOT
  );
  return snap?.proposal?.review ?? sessionReview;
}

/** The header's switch of the session's review mode (edits go to a proposal). */
export function ReviewToggle(props: {
  model: ReviewModel;
  /** The session's own flag, until the proposal is read. */
  sessionReview: boolean;
}): JSX.Element {
  const { model } = props;
  const on = useReviewOn(model, props.sessionReview);
  return (
    <button
      className={`jp-ThinkIconButton jp-ThinkReview-toggle${on ? ' jp-mod-active' : ''}`}
      aria-label="Review mode"
      aria-pressed={on}
      title={
        on
          ? 'Review mode is on: the agent proposes edits, you accept or reject them. Click to let it edit files directly.'
          : 'Review mode is off: the agent edits files directly. Click to have it propose edits for you to accept or reject.'
      }
      onClick={() => void model.setReview(!on)}
    >
      <codeCheckIcon.react tag="span" />
    </button>
  );
}

/** The proposal section of the sidebar. */
export function ReviewPanel(props: { model: ReviewModel }): JSX.Element | null {
  const { model } = props;
  const snap = useSyncExternalStore(model.subscribe, model.getSnapshot);
  const p = snap.proposal;
  const files = p?.files ?? [];
  const review = p?.review ?? false;
  if (!snap.sessionId || (!files.length && !snap.failure && !review)) {
    return null;
  }
  const decide = (accept: Choice, reject: Choice): void =>
    void model.decide(accept, reject);
  const n = changeCount(p);
  // Conflicts about ids no longer listed (a file merged away) still show at the top.
  const listed = (c: IConflict): boolean =>
    files.some(f => f.path === c.path || c.id.startsWith(`${f.path}::`));
  return (
    <section
      className="jp-ThinkReview"
      aria-label="Proposed changes"
      data-busy={snap.busy}
    >
      <div className="jp-ThinkReview-row jp-ThinkReview-head">
        <span className="jp-ThinkReview-title">
          {files.length
            ? `Proposal: ${n} change${n === 1 ? '' : 's'} in ${files.length} file${
                files.length === 1 ? '' : 's'
              }`
            : 'Review mode: the agent’s edits wait here for you'}
        </span>
        {files.length ? (
          <span className="jp-ThinkReview-decide">
            <button
              className="jp-Button jp-mod-styled jp-mod-accept jp-ThinkReview-acceptAll"
              aria-label="Accept all proposed changes"
              disabled={snap.busy}
              onClick={() => decide('all', [])}
            >
              Accept all
            </button>
            <button
              className="jp-Button jp-mod-styled jp-mod-reject jp-ThinkReview-rejectAll"
              aria-label="Reject all proposed changes"
              disabled={snap.busy}
              onClick={() => decide([], 'all')}
            >
              Reject all
            </button>
          </span>
        ) : null}
      </div>
      {snap.failure ? (
        <div className="jp-ThinkReview-failure" role="alert">
          {snap.failure}
        </div>
      ) : null}
      <Conflicts items={snap.conflicts.filter(c => !listed(c))} />
      {snap.errors.length ? (
        <ul className="jp-ThinkReview-errors" role="alert">
          {snap.errors.map(e => (
            <li key={e.id}>
              {e.id}: {e.detail}
            </li>
          ))}
        </ul>
      ) : null}
      {files.length ? (
        <ul className="jp-ThinkReview-files">
          {files.map(f => (
            <FileView
              key={f.path}
              file={f}
              busy={snap.busy}
              conflicts={snap.conflicts}
              decide={decide}
            />
          ))}
        </ul>
      ) : null}
    </section>
  );
}
