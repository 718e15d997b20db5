/**
 * Rewind from the sidebar: a control on each user message, the rewind's progress and its
 * report, and the "‹ 2 / 3 ›" switcher of a message with siblings.
 *
 * "Restore files" undoes what the agent changed since the message (a person's later typing
 * stays; an overlap is kept as the person has it and reported by file, cell and lines);
 * "Restore conversation" starts a branch before the message and puts its text back in the
 * composer; "Restore both" does the two. A run in flight is stopped first (by the server).
 * The switcher asks whether the files follow the conversation to the other version; when
 * they do, the same note reports what changed and what was kept as people have it.
 */

import { ISignal, Signal } from '@lumino/signaling';
import React, { useEffect, useRef, useState } from 'react';

import type { ISiblings } from './branches';

/** What a rewind restores. */
export type RestoreWhat = 'files' | 'conversation' | 'both';

/** `POST sessions/{id}/actions/{aid}/undo`'s answer. */
export interface IUndoResult {
  undo_id: string;
  restored: string[];
  deleted: string[];
  conflicts: IRewindConflict[];
}

/** What the note reports: a rewind, or a switch of versions that took the files along. */
export type TravelWhat = RestoreWhat | 'switch';

/** A change a rewind left as people have it. */
export interface IRewindConflict {
  path: string;
  /** The notebook cell's id. */
  cell?: string;
  /** Line ranges, 1-based and inclusive. */
  lines?: number[][];
  reason?: string;
}

/** `POST sessions/{id}/rewind`'s answer. */
export interface IRewindResult {
  restored: string[];
  deleted: string[];
  conflicts: IRewindConflict[];
  branch_id?: string;
  left_branch_id?: string;
  /** The message's text, when the conversation went back. */
  content?: string;
  /** Takes the files back (`{"undo": rewind_id}`). */
  rewind_id?: string;
}

/** The last rewind of the panel, as its note shows it. */
export type RewindState =
  | { phase: 'working'; what: TravelWhat; stopping: boolean }
  | { phase: 'done'; what: TravelWhat; result: IRewindResult }
  | { phase: 'failed'; what: TravelWhat; error: string };

const LABELS: [RestoreWhat, string, string][] = [
  [
    'files',
    'Restore files',
    'Put the files the agent changed since this message back as they were (your own edits stay)'
  ],
  [
    'conversation',
    'Restore conversation',
    'Go back to before this message on a new branch (the old one is kept) and put its text in the composer'
  ],
  ['both', 'Restore both', 'Restore the files and the conversation']
];

/** Props of the rewind control of one user message. */
export interface IRewindControlProps {
  onRewind: (what: RestoreWhat) => void;
}

/** "Rewind" on a user message: opens the four choices, closed by Cancel or Escape. */
export function RewindControl(props: IRewindControlProps): JSX.Element {
  const [open, setOpen] = useState(false);
  const first = useRef<HTMLButtonElement>(null);
  const opener = useRef<HTMLButtonElement>(null);
  // Cancel gives the focus back to "Rewind" (mounted again only after the render).
  const refocus = useRef(false);
  useEffect(() => {
    if (open) {
      first.current?.focus();
    } else if (refocus.current) {
      refocus.current = false;
      opener.current?.focus();
    }
  }, [open]);
  const close = (): void => {
    refocus.current = true;
    setOpen(false);
  };
  if (!open) {
    return (
      <button
        ref={opener}
        className="jp-ThinkLabelButton jp-ThinkRewind-open"
        aria-label="Rewind to before this message"
        aria-expanded={false}
        title="Restore the files, the conversation or both to before this message"
        onClick={() => setOpen(true)}
      >
        <span aria-hidden="true">↶</span>
        <span>Rewind</span>
      </button>
    );
  }
  return (
    <ChoicePanel
      label="Rewind to before this message"
      title="Back to before this message:"
      onClose={close}
    >
      {LABELS.map(([what, label, title], i) => (
        <button
          key={what}
          ref={i === 0 ? first : undefined}
          className="jp-ThinkLabelButton jp-ThinkRewind-choice"
          data-restore={what}
          title={title}
          onClick={() => {
            setOpen(false);
            props.onRewind(what);
          }}
        >
          {label}
        </button>
      ))}
    </ChoicePanel>
  );
}

/** Props of an inline panel of choices. */
interface IChoicePanelProps {
  label: string;
  title: string;
  className?: string;
  onClose: () => void;
  children: React.ReactNode;
}

/** The inline panel of a control's choices, then Cancel; Escape closes it too. */
function ChoicePanel(props: IChoicePanelProps): JSX.Element {
  return (
    <div
      className={`jp-ThinkRewind-choices ${props.className ?? ''}`.trim()}
      role="group"
      aria-label={props.label}
      onKeyDown={e => {
        if (e.key === 'Escape') {
          e.stopPropagation();
          props.onClose();
        }
      }}
    >
      <span className="jp-ThinkRewind-title" aria-hidden="true">
        {props.title}
      </span>
      {props.children}
      <button
        className="jp-ThinkLabelButton jp-ThinkRewind-cancel"
        onClick={props.onClose}
      >
        Cancel
      </button>
    </div>
  );
}

/** Props of the switcher between a message's siblings. */
export interface IBranchSwitcherProps {
  siblings: ISiblings;
  /** Show version `index`; with `files`, the files go to its state too. */
  onShow: (index: number, files: boolean) => void;
  disabled?: boolean;
}

const SWITCH_LABELS: [boolean, string, string][] = [
  [
    false,
    'Switch conversation',
    "Show this version's branch; the files stay as they are"
  ],
  [
    true,
    'Switch conversation and files',
    "Show this version's branch and take the files to its state (your own edits stay)"
  ]
];

/** "‹ 2 / 3 ›": the versions of a message, one per branch that has it. An arrow asks
 * whether the files follow (Cancel or Escape gives the focus back to the arrow). */
export function BranchSwitcher(props: IBranchSwitcherProps): JSX.Element {
  const { siblings, onShow, disabled } = props;
  const at = siblings.index;
  const total = siblings.ids.length;
  const [asking, setAsking] = useState<number | null>(null);
  const first = useRef<HTMLButtonElement>(null);
  const prev = useRef<HTMLButtonElement>(null);
  const next = useRef<HTMLButtonElement>(null);
  const opener = useRef<HTMLButtonElement | null>(null);
  useEffect(() => {
    if (asking !== null) {
      first.current?.focus();
    } else if (opener.current) {
      opener.current.focus();
      opener.current = null;
    }
  }, [asking]);
  const ask = (index: number): void => {
    opener.current = null;
    setAsking(index);
  };
  const close = (): void => {
    opener.current =
      asking !== null && asking < at ? prev.current : next.current;
    setAsking(null);
  };
  return (
    <>
      <span
        className="jp-ThinkBranches"
        role="group"
        aria-label={`Version ${at + 1} of ${total} of this message`}
      >
        <button
          ref={prev}
          className="jp-ThinkIconButton jp-ThinkBranches-prev"
          aria-label="Show the previous version of this message"
          aria-expanded={asking !== null && asking < at}
          title="Previous version (switches the conversation to its branch, and the files if you choose)"
          disabled={disabled || at === 0}
          onClick={() => ask(at - 1)}
        >
          ‹
        </button>
        <span className="jp-ThinkBranches-count">
          {at + 1} / {total}
        </span>
        <button
          ref={next}
          className="jp-ThinkIconButton jp-ThinkBranches-next"
          aria-label="Show the next version of this message"
          aria-expanded={asking !== null && asking > at}
          title="Next version (switches the conversation to its branch, and the files if you choose)"
          disabled={disabled || at === total - 1}
          onClick={() => ask(at + 1)}
        >
          ›
        </button>
      </span>
      {asking !== null && !disabled ? (
        <ChoicePanel
          className="jp-ThinkBranches-choices"
          label={`Switch to version ${asking + 1} of ${total}`}
          title={`Show version ${asking + 1} of ${total}:`}
          onClose={close}
        >
          {SWITCH_LABELS.map(([files, label, title], i) => (
            <button
              key={label}
              ref={i === 0 ? first : undefined}
              className="jp-ThinkLabelButton jp-ThinkRewind-choice"
              data-files={files}
              title={title}
              onClick={() => {
                setAsking(null);
                onShow(asking, files);
              }}
            >
              {label}
            </button>
          ))}
        </ChoicePanel>
      ) : null}
    </>
  );
}

function span(lines: number[]): string {
  const [a, b] = lines;
  return b === undefined || b <= a ? `line ${a}` : `lines ${a}–${b}`;
}

/** Where a conflict is: the file, the cell, the lines. */
export function conflictPlace(c: IRewindConflict): string {
  const parts = [c.path];
  if (c.cell) {
    parts.push(`cell ${c.cell}`);
  }
  if (c.lines?.length) {
    parts.push(c.lines.map(span).join(', '));
  }
  return parts.join(', ');
}

/** The note's sentence for a finished rewind or switch with files. */
export function rewindSummary(what: TravelWhat, r: IRewindResult): string {
  const said: string[] = [];
  if (what !== 'conversation') {
    if (r.restored.length) {
      said.push(`restored ${r.restored.join(', ')}`);
    }
    if (r.deleted.length) {
      said.push(`removed ${r.deleted.join(', ')}`);
    }
    if (!r.restored.length && !r.deleted.length && !r.conflicts.length) {
      said.push(
        what === 'switch'
          ? 'no file needed changing'
          : 'no file needed restoring'
      );
    }
  }
  if (what === 'switch') {
    return `Switched the conversation and files to this version: ${said.join('; ') || 'the rest kept as people changed it'}.`;
  }
  if (what !== 'files') {
    said.push(
      'the conversation is back to before the message (the old branch is kept) and its text is in the composer'
    );
  }
  const text = said.join('; ');
  return `Rewound: ${text}.`;
}

/** Props of the rewind note. */
export interface IRewindNoteProps {
  state: RewindState;
  onDismiss: () => void;
}

/** The last rewind: in progress (stopping the run first), its report, or its error. */
export function RewindNote(props: IRewindNoteProps): JSX.Element {
  const { state, onDismiss } = props;
  if (state.phase === 'working') {
    return (
      <div className="jp-ThinkRewindNote" role="status">
        {state.what === 'switch'
          ? 'Switching the conversation and files…'
          : state.stopping
            ? 'Stopping the run, then rewinding…'
            : 'Rewinding…'}
      </div>
    );
  }
  const dismiss = (
    <button
      className="jp-ThinkIconButton jp-ThinkRewindNote-dismiss"
      aria-label="Dismiss the rewind report"
      title="Dismiss"
      onClick={onDismiss}
    >
      ×
    </button>
  );
  if (state.phase === 'failed') {
    return (
      <div className="jp-ThinkRewindNote jp-mod-error" role="alert">
        <span>
          {state.what === 'switch' ? 'Switch' : 'Rewind'} failed: {state.error}
        </span>
        {dismiss}
      </div>
    );
  }
  const { result } = state;
  return (
    <div
      className={`jp-ThinkRewindNote${result.conflicts.length ? ' jp-mod-conflicts' : ''}`}
      role="status"
    >
      <div className="jp-ThinkRewindNote-body">
        <span>{rewindSummary(state.what, result)}</span>
        {result.conflicts.length ? (
          <>
            <div className="jp-ThinkRewindNote-kept">
              {state.what === 'switch'
                ? 'Kept as people changed them (not switched):'
                : 'Kept as people changed them since (not undone):'}
            </div>
            <ul className="jp-ThinkRewindNote-conflicts">
              {result.conflicts.map((c, i) => (
                <li key={i} title={c.reason}>
                  {conflictPlace(c)}
                </li>
              ))}
            </ul>
          </>
        ) : null}
      </div>
      {dismiss}
    </div>
  );
}

/** What a rewind needs of the panel's chat. */
export interface IRewindHost {
  readonly sessionId: string | null;
  /** A run is in flight or queued (the server stops it first). */
  running(): boolean;
  rewind(
    id: string,
    messageId: string,
    what: RestoreWhat
  ): Promise<IRewindResult>;
  /** The conversation changed on the server: read it again. */
  reload(): Promise<void>;
}

/** The panel's rewinds: one at a time, their state, and the text for the composer. */
export class RewindModel {
  constructor(private readonly host: IRewindHost) {}

  /** The last rewind, or null. */
  get state(): RewindState | null {
    return this._state;
  }

  /** Emitted with the message's text when a rewind of the conversation brings it back. */
  get textBack(): ISignal<this, string> {
    return this._textBack;
  }

  /** Subscribe to changes (for `useSyncExternalStore`). */
  subscribe = (listener: () => void): (() => void) => {
    this._listeners.add(listener);
    return () => this._listeners.delete(listener);
  };

  /** Snapshot getter for `useSyncExternalStore`. */
  getSnapshot = (): RewindState | null => this._state;

  /** Rewind to before `messageId`. */
  async rewind(messageId: string, what: RestoreWhat): Promise<void> {
    await this.track(what, id => this.host.rewind(id, messageId, what));
  }

  /** Switch versions with the files (`work` makes the switch and answers what changed). */
  async switchWithFiles(
    work: () => Promise<IRewindResult | null>
  ): Promise<void> {
    await this.track('switch', async () => {
      const out = await work();
      if (!out) {
        throw new Error('no session is open');
      }
      return out;
    });
  }

  /** Hide the note. */
  dismiss(): void {
    this.set(null);
  }

  /** One at a time: the note says it is working, then what `work` answered or its error. */
  private async track(
    what: TravelWhat,
    work: (id: string) => Promise<IRewindResult>
  ): Promise<void> {
    const id = this.host.sessionId;
    if (!id || this._state?.phase === 'working') {
      return;
    }
    this.set({ phase: 'working', what, stopping: this.host.running() });
    try {
      const result = await work(id);
      if (what !== 'files') {
        await this.host.reload();
      }
      this.set({ phase: 'done', what, result });
      if (result.content !== undefined) {
        this._textBack.emit(result.content);
      }
    } catch (e) {
      this.set({ phase: 'failed', what, error: errorText(e) });
    }
  }

  private set(next: RewindState | null): void {
    this._state = next;
    for (const l of this._listeners) {
      l();
    }
  }

  private _state: RewindState | null = null;
  private _listeners = new Set<() => void>();
  private _textBack = new Signal<this, string>(this);
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
