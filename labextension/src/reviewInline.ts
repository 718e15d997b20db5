/**
 * A proposal's cells inline in the open notebook: each proposed change is drawn as a
 * decoration on the live cell it changes (or between the cells where it adds one), with
 * Accept / Reject, and a bar above the notebook offers Accept all / Reject all for it.
 *
 * Decorations are DOM nodes of this page only: nothing is written into the notebook's
 * shared model, so the people editing it (and the file on disk) see the workspace, not the
 * proposal, until someone accepts. An accepted change reaches the notebook through the
 * server's merge into the room; the proposal frame that follows redraws the decorations.
 */

import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Widget } from '@lumino/widgets';

import {
  diffLines,
  type Choice,
  type IProposalCell,
  type IProposalFile,
  type IReviewSnapshot,
  type ReviewModel
} from './review';

/** The class of every decoration node (and the bar's). */
export const INLINE_CLASS = 'jp-ThinkReviewInline';

/** What a notebook cell widget offers here. */
export interface ICellLike {
  node: HTMLElement;
  model: { id: string };
}

/** A button that decides one change. */
function button(
  label: string,
  text: string,
  kind: 'accept' | 'reject',
  disabled: boolean,
  onClick: () => void
): HTMLButtonElement {
  const b = document.createElement('button');
  b.className = `jp-Button jp-mod-styled jp-mod-${kind} ${INLINE_CLASS}-${kind}`;
  b.textContent = text;
  b.setAttribute('aria-label', label);
  b.title = label;
  b.disabled = disabled;
  b.addEventListener('click', e => {
    e.stopPropagation(); // not a click on the cell (no selection change)
    onClick();
  });
  return b;
}

/** How a proposed cell is named in its buttons: `proposed change to cell 2`. */
export function inlineName(cell: IProposalCell, position: number): string {
  const what =
    cell.status === 'added'
      ? 'new cell'
      : cell.status === 'removed'
        ? 'removal of cell'
        : 'change to cell';
  return `proposed ${what} ${position}`;
}

/** The decoration of one proposed cell. */
export function decoration(
  file: IProposalFile,
  cell: IProposalCell,
  position: number,
  snap: IReviewSnapshot,
  decide: (accept: Choice, reject: Choice) => void
): HTMLElement {
  const name = inlineName(cell, position);
  const node = document.createElement('div');
  node.className = INLINE_CLASS;
  node.dataset.id = cell.id;
  node.dataset.status = cell.status;
  node.dataset.path = file.path;
  // Keys on its buttons are theirs, not the notebook's command-mode shortcuts.
  node.setAttribute('data-lm-suppress-shortcuts', 'true');
  node.setAttribute('role', 'group');
  node.setAttribute('aria-label', `Think: ${name}`);
  const head = document.createElement('div');
  head.className = `${INLINE_CLASS}-head`;
  const title = document.createElement('span');
  title.className = `${INLINE_CLASS}-title`;
  title.textContent = `Think proposes a ${name.replace('proposed ', '')}${
    cell.outputs_changed ? ' (outputs changed)' : ''
  }`;
  head.append(
    title,
    button(`Accept ${name}`, 'Accept', 'accept', snap.busy, () =>
      decide([cell.id], [])
    ),
    button(`Reject ${name}`, 'Reject', 'reject', snap.busy, () =>
      decide([], [cell.id])
    )
  );
  const pre = document.createElement('pre');
  pre.className = 'jp-ThinkReview-diff';
  const text =
    cell.source_diff ||
    (cell.status === 'removed' ? (cell.base_source ?? '') : (cell.source ?? ''))
      .split('\n')
      .map(l => (cell.status === 'removed' ? `-${l}` : `+${l}`))
      .join('\n');
  for (const l of diffLines(text, false)) {
    const span = document.createElement('span');
    span.className = 'jp-ThinkReview-line';
    span.dataset.kind = l.kind;
    span.textContent = `${l.text}\n`;
    pre.append(span);
  }
  node.append(head, pre);
  for (const c of snap.conflicts.filter(x => x.id === cell.id)) {
    const note = document.createElement('div');
    note.className = `${INLINE_CLASS}-conflict`;
    note.setAttribute('role', 'alert');
    note.textContent = `Conflict: ${c.detail}`;
    node.append(note);
  }
  return node;
}

/**
 * Put the decorations of `file` on `cells` (the notebook's cell widgets, in order):
 * a changed or removed cell's at the end of its live cell, an added cell's after the
 * live cell before its position (at the top of the first cell for position 0).
 */
export function decorate(
  cells: readonly ICellLike[],
  file: IProposalFile | null,
  snap: IReviewSnapshot,
  decide: (accept: Choice, reject: Choice) => void
): number {
  for (const c of cells) {
    c.node
      .querySelectorAll(`:scope > .${INLINE_CLASS}`)
      .forEach(n => n.remove());
  }
  if (!file || !cells.length) {
    return 0;
  }
  let placed = 0;
  for (const cell of file.cells ?? []) {
    const live = cells.findIndex(c => c.model.id === cell.cell_id);
    if (cell.status !== 'added' && live >= 0) {
      cells[live].node.append(decoration(file, cell, live + 1, snap, decide));
    } else {
      // An added cell, or one the person removed meanwhile: where the proposal has it.
      const at = Math.min(Math.max(cell.index, 0), cells.length);
      const node = decoration(file, cell, at + 1, snap, decide);
      if (at === 0) {
        cells[0].node.prepend(node);
      } else {
        cells[at - 1].node.append(node);
      }
    }
    placed++;
  }
  return placed;
}

/** The bar above the notebook: how many changes, Accept all and Reject all. */
function barWidget(
  file: IProposalFile,
  snap: IReviewSnapshot,
  decide: (accept: Choice, reject: Choice) => void
): Widget {
  const w = new Widget();
  w.addClass(`${INLINE_CLASS}-bar`);
  fillBar(w.node, file, snap, decide);
  return w;
}

function fillBar(
  node: HTMLElement,
  file: IProposalFile,
  snap: IReviewSnapshot,
  decide: (accept: Choice, reject: Choice) => void
): void {
  node.replaceChildren();
  node.setAttribute('data-lm-suppress-shortcuts', 'true');
  const n = file.cells?.length ?? 0;
  const label = document.createElement('span');
  label.className = `${INLINE_CLASS}-count`;
  label.textContent = `Think proposes ${n} cell change${n === 1 ? '' : 's'} in this notebook`;
  const conflicts = snap.conflicts.filter(c => c.path === file.path);
  if (conflicts.length) {
    label.textContent += ` · ${conflicts.length} conflict${conflicts.length === 1 ? '' : 's'}`;
    label.title = conflicts.map(c => c.detail).join('\n');
  }
  node.append(
    label,
    button(
      `Accept all proposed changes to ${file.path}`,
      'Accept all',
      'accept',
      snap.busy,
      () => decide([file.path], [])
    ),
    button(
      `Reject all proposed changes to ${file.path}`,
      'Reject all',
      'reject',
      snap.busy,
      () => decide([], [file.path])
    )
  );
}

/** Keeps every open notebook's decorations in step with the review model. */
export class InlineReview {
  constructor(
    private readonly model: ReviewModel,
    private readonly notebooks: INotebookTracker
  ) {
    model.changed.connect(this.renderAll, this);
    notebooks.widgetAdded.connect((_, panel) => this.follow(panel));
    notebooks.forEach(panel => this.follow(panel));
  }

  /** Redraw the decorations of every open notebook. */
  renderAll(): void {
    this.notebooks.forEach(panel => this.render(panel));
  }

  private follow(panel: NotebookPanel): void {
    const redraw = (): void => this.render(panel);
    void panel.context.ready.then(() => {
      panel.content.model?.cells.changed.connect(redraw);
      redraw();
    });
    panel.context.pathChanged.connect(redraw);
    panel.disposed.connect(() => this._bars.delete(panel));
  }

  private render(panel: NotebookPanel): void {
    if (panel.isDisposed || !panel.context.isReady) {
      return;
    }
    const snap = this.model.getSnapshot();
    const path = panel.context.path;
    const file =
      snap.proposal?.files.find(
        f => f.kind === 'notebook' && f.path === path && f.cells?.length
      ) ?? null;
    const decide = (accept: Choice, reject: Choice): void =>
      void this.model.decide(accept, reject);
    decorate(panel.content.widgets, file, snap, decide);
    const bar = this._bars.get(panel);
    if (!file) {
      bar?.dispose();
      this._bars.delete(panel);
    } else if (bar && !bar.isDisposed) {
      fillBar(bar.node, file, snap, decide);
    } else {
      // The content header, not the toolbar: a toolbar too narrow hides items in its menu.
      const item = barWidget(file, snap, decide);
      panel.contentHeader.addWidget(item);
      this._bars.set(panel, item);
    }
  }

  private _bars = new Map<NotebookPanel, Widget>();
}
