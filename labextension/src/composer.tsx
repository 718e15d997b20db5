/**
 * The input box: Enter sends, Shift+Enter adds a line; stop and retry; attach context.
 *
 * Files and images can be pasted or dropped on it, or picked with the paper-clip button;
 * notebook cells can be dragged onto it from a notebook.
 * While a run is in flight a message can still be sent: it is queued behind the run
 * ("Queue", or Enter), or sent at once after stopping the run ("Stop & send").
 */

import {
  addIcon,
  closeIcon,
  codeCheckIcon,
  fileIcon,
  fileUploadIcon,
  notebookIcon,
  refreshIcon
} from '@jupyterlab/ui-components';
import React, { useEffect, useRef, useState } from 'react';

import { PendingAttachments } from './attachmentBar';
import {
  addPending,
  CELLS_MIME,
  IPendingAttachment,
  pendingFromCells,
  pendingFromFile
} from './attachments';
import { contextChipLabel, type IContextSummary } from './context';
import { type InspectVariables, useVariableChips } from './variables';

/** Props of the composer. */
export interface IComposerProps {
  running: boolean;
  canRetry: boolean;
  /** The active document goes with the next message (shown as a removable chip). */
  attach: boolean;
  /** The active document and its selected cells, or null when there is none. */
  context: IContextSummary | null;
  onAttachChange: (attach: boolean) => void;
  onSend: (text: string, attachments: IPendingAttachment[]) => void;
  onStopAndSend: (text: string, attachments: IPendingAttachment[]) => void;
  onStop: () => void;
  onRetry: () => void;
  /** Up in an empty composer: edit the last message you sent. */
  onEditLast?: () => void;
  /** Text to put in the box (a rewound message's); `n` changes on every request. */
  fill?: { text: string; n: number } | null;
  /** The notebook path of cells dragged from a notebook widget (the drag's source). */
  cellsPath?: (source: unknown) => string | null;
  /** Reads variables of the active notebook's kernel (`@name` chips). */
  inspectVariables?: InspectVariables;
  /** The next message's edits go to a proposal (offered while review mode is off). */
  proposeOnly?: boolean;
  onProposeOnlyChange?: (on: boolean) => void;
}

/** What Lumino's drag events carry (typed here: `@lumino/dragdrop` is not a dependency). */
interface ILuminoDragEvent extends Event {
  mimeData: { hasData(mime: string): boolean; getData(mime: string): unknown };
  source: unknown;
  proposedAction: string;
  dropAction: string;
}

/** The message input and its buttons. */
export function Composer(props: IComposerProps): JSX.Element {
  const { running, canRetry, attach, context } = props;
  const contextLabel = context ? contextChipLabel(context) : null;
  const [text, setText] = useState('');
  const [pending, setPending] = useState<IPendingAttachment[]>([]);
  const [dropping, setDropping] = useState(false);
  const root = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (props.fill) {
      setText(props.fill.text);
      root.current?.querySelector('textarea')?.focus();
    }
  }, [props.fill?.n]);
  const picker = useRef<HTMLInputElement>(null);
  const cellsPath = useRef(props.cellsPath);
  cellsPath.current = props.cellsPath;
  // `@name`: a variable of the active notebook's kernel, as a chip of its own.
  const variables = useVariableChips(
    text,
    context?.kind === 'notebook' ? context.path : null,
    props.inspectVariables
  );

  const addFiles = (files: ArrayLike<File>): void => {
    const more = Array.from(files).map(f => pendingFromFile(f));
    if (more.length) {
      setPending(p => addPending(p, more));
    }
  };

  // Notebook cells are dragged with Lumino's drag and drop, not the browser's.
  useEffect(() => {
    const node = root.current;
    if (!node) {
      return;
    }
    const accepts = (e: Event): e is ILuminoDragEvent =>
      !!(e as ILuminoDragEvent).mimeData?.hasData?.(CELLS_MIME);
    const over = (e: Event): void => {
      if (!accepts(e)) {
        return;
      }
      e.preventDefault();
      e.stopPropagation();
      e.dropAction = 'copy';
      setDropping(true);
    };
    const leave = (): void => setDropping(false);
    const drop = (e: Event): void => {
      setDropping(false);
      if (!accepts(e)) {
        return;
      }
      e.preventDefault();
      e.stopPropagation();
      e.dropAction = 'copy';
      const path = cellsPath.current?.(e.source) ?? null;
      const att = pendingFromCells(e.mimeData.getData(CELLS_MIME), path);
      if (att) {
        setPending(p => addPending(p, [att]));
      }
    };
    node.addEventListener('lm-dragenter', over);
    node.addEventListener('lm-dragover', over);
    node.addEventListener('lm-dragleave', leave);
    node.addEventListener('lm-drop', drop);
    return () => {
      node.removeEventListener('lm-dragenter', over);
      node.removeEventListener('lm-dragover', over);
      node.removeEventListener('lm-dragleave', leave);
      node.removeEventListener('lm-drop', drop);
    };
  }, []);

  const sendable = [...pending, ...variables.chips].filter(a => !a.error);
  const hasInput = !!text.trim() || sendable.length > 0;
  const send = (): void => {
    if (!hasInput) {
      return;
    }
    props.onSend(text, sendable); // queued behind the run in flight, if there is one
    setText('');
    setPending([]);
    variables.reset();
  };
  const stopAndSend = (): void => {
    if (!hasInput) {
      return;
    }
    props.onStopAndSend(text, sendable);
    setText('');
    setPending([]);
    variables.reset();
  };
  return (
    <div
      className={`jp-ThinkComposer${dropping ? ' jp-mod-dropping' : ''}`}
      ref={root}
      onDragOver={e => {
        if (e.dataTransfer.types.includes('Files')) {
          e.preventDefault();
          setDropping(true);
        }
      }}
      onDragLeave={() => setDropping(false)}
      onDrop={e => {
        setDropping(false);
        if (e.dataTransfer.files.length) {
          e.preventDefault();
          addFiles(e.dataTransfer.files);
        }
      }}
    >
      <PendingAttachments
        items={[...pending, ...variables.chips]}
        onRemove={id =>
          id.startsWith('var-')
            ? variables.dismiss(id)
            : setPending(p => p.filter(a => a.id !== id))
        }
        first={
          attach && context && contextLabel ? (
            <ContextChip
              summary={context}
              label={contextLabel}
              onRemove={() => props.onAttachChange(false)}
            />
          ) : null
        }
      />
      <textarea
        className="jp-ThinkComposer-input"
        aria-label="Message to Think"
        placeholder={
          (attach && context) || pending.length
            ? 'Ask Think… (Enter to send)'
            : 'Ask Think… (Enter to send). Only your text is sent: nothing is attached unless you add it.'
        }
        title="Enter sends, Shift+Enter adds a line, Escape stops the run, Up (in an empty box) edits your last message"
        rows={3}
        value={text}
        onChange={e => setText(e.target.value)}
        onPaste={e => {
          if (e.clipboardData.files.length) {
            e.preventDefault(); // an image or file; pasted text stays as usual
            addFiles(e.clipboardData.files);
          }
        }}
        onKeyDown={e => {
          if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault();
            send();
          } else if (e.key === 'Escape' && running) {
            e.preventDefault();
            e.stopPropagation(); // JupyterLab would otherwise take the focus away
            props.onStop();
          } else if (
            e.key === 'ArrowUp' &&
            !text &&
            !running &&
            canRetry &&
            props.onEditLast
          ) {
            e.preventDefault();
            props.onEditLast();
          }
        }}
      />
      <div className="jp-ThinkComposer-bar">
        {context && !attach ? (
          <button
            className="jp-ThinkLabelButton jp-ThinkComposer-attach"
            aria-label={`Attach ${contextLabel}`}
            title={`Attach ${context.path}${
              context.cells.length ? ' with its selected cells' : ''
            } to your next messages (nothing is attached unless you add it)`}
            onClick={() => props.onAttachChange(true)}
          >
            <addIcon.react tag="span" />
            <span className="jp-ThinkComposer-attachName">{contextLabel}</span>
          </button>
        ) : !context ? (
          <span
            className="jp-ThinkComposer-attach jp-ThinkComposer-none"
            title="Open a notebook or file to attach it"
          >
            No active file
          </span>
        ) : null}
        <button
          className="jp-ThinkIconButton jp-ThinkComposer-clip"
          aria-label="Attach files or images"
          title="Attach files or images (or paste, or drop them here; drag notebook cells here)"
          onClick={() => picker.current?.click()}
        >
          <fileUploadIcon.react tag="span" />
        </button>
        <input
          ref={picker}
          type="file"
          multiple
          hidden
          className="jp-ThinkComposer-files"
          onChange={e => {
            if (e.target.files) {
              addFiles(e.target.files);
            }
            e.target.value = '';
          }}
        />
        {props.onProposeOnlyChange ? (
          <button
            className={`jp-ThinkIconButton jp-ThinkComposer-propose${
              props.proposeOnly ? ' jp-mod-active' : ''
            }`}
            aria-label="Propose only"
            aria-pressed={!!props.proposeOnly}
            title="Propose only: this message's edits wait in a proposal for you to accept or reject"
            onClick={() => props.onProposeOnlyChange?.(!props.proposeOnly)}
          >
            <codeCheckIcon.react tag="span" />
          </button>
        ) : null}
        <span className="jp-ThinkComposer-spacer" />
        {canRetry && !running ? (
          <button
            className="jp-ThinkLabelButton jp-ThinkComposer-retry"
            aria-label="Retry the last message"
            title="Send the last message again (drops the answer after it)"
            onClick={props.onRetry}
          >
            <refreshIcon.react tag="span" />
            <span>Retry</span>
          </button>
        ) : null}
        {running ? (
          <button
            className="jp-Button jp-mod-styled jp-mod-warn jp-ThinkComposer-stop"
            aria-label="Stop"
            title="Stop"
            onClick={props.onStop}
          >
            Stop
          </button>
        ) : null}
        {running && hasInput ? (
          <>
            <button
              className="jp-Button jp-mod-styled jp-mod-warn jp-ThinkComposer-stopSend"
              aria-label="Stop and send"
              title="Stop the current request and send this message now"
              onClick={stopAndSend}
            >
              Stop &amp; send
            </button>
            <button
              className="jp-Button jp-mod-styled jp-mod-accept jp-ThinkComposer-queue"
              aria-label="Queue"
              title="Send when the current request ends (Enter)"
              onClick={send}
            >
              Queue
            </button>
          </>
        ) : running ? null : (
          <button
            className="jp-Button jp-mod-styled jp-mod-accept jp-ThinkComposer-send"
            aria-label="Send"
            title="Send (Enter)"
            disabled={!hasInput}
            onClick={send}
          >
            Send
          </button>
        )}
      </div>
    </div>
  );
}

/** The active document as a chip of the next message, removable like any attachment. */
function ContextChip(props: {
  summary: IContextSummary;
  label: string;
  onRemove: () => void;
}): JSX.Element {
  const Icon = props.summary.kind === 'notebook' ? notebookIcon : fileIcon;
  return (
    <span
      className="jp-ThinkAttachment jp-ThinkAttachment-context"
      data-kind="context"
      title={`${props.summary.path}: goes with your next messages while it is the active document`}
    >
      <Icon.react tag="span" className="jp-ThinkAttachment-icon" />
      <span className="jp-ThinkAttachment-name">{props.label}</span>
      <button
        className="jp-ThinkIconButton"
        aria-label={`Remove ${props.label}`}
        onClick={props.onRemove}
      >
        <closeIcon.react tag="span" />
      </button>
    </span>
  );
}
