/**
 * What the user is working on, attached to a message as `context`.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { IDocumentManager } from '@jupyterlab/docmanager';
import type { INotebookTracker } from '@jupyterlab/notebook';

import type { IMessageContext } from './tokens';

/** What a context chip names: the document and the notebook cells selected in it. */
export interface IContextSummary {
  path: string;
  kind: 'notebook' | 'file';
  /** Indexes of the selected (or active) cells of a notebook. */
  cells: number[];
}

/** The chip's text: "notes.md", "analysis.ipynb · cell 3", "analysis.ipynb · 2 cells". */
export function contextChipLabel(s: IContextSummary): string {
  const name = s.path.split('/').pop() || s.path;
  if (s.kind !== 'notebook' || !s.cells.length) {
    return name;
  }
  return s.cells.length === 1
    ? `${name} · cell ${s.cells[0] + 1}`
    : `${name} · ${s.cells.length} cells`;
}

/** True if two summaries name the same document and cells (no re-render then). */
export function sameSummary(
  a: IContextSummary | null,
  b: IContextSummary | null
): boolean {
  return (
    a === b ||
    (!!a &&
      !!b &&
      a.path === b.path &&
      a.kind === b.kind &&
      a.cells.join() === b.cells.join())
  );
}

/** Collects the active notebook (and its selected cells) or file. */
export class ContextProvider {
  constructor(
    private readonly app: JupyterFrontEnd,
    private readonly docManager: IDocumentManager | null,
    private readonly notebooks: INotebookTracker | null
  ) {}

  /** The path of the notebook whose widget is ``source`` (cells dragged from it). */
  notebookPath(source: unknown): string | null {
    const panel = this.notebooks?.find(p => p.content === source);
    return panel?.context.path ?? null;
  }

  /** A short label for the composer (the active document's path), or null. */
  label(): string | null {
    return this.current()?.path ?? null;
  }

  /** What the composer's chip shows (no cell sources: it is polled). */
  summary(): IContextSummary | null {
    const widget = this.app.shell.currentWidget;
    if (!widget) {
      return null;
    }
    const nb = this.notebooks?.currentWidget;
    if (nb && nb === widget) {
      const notebook = nb.content;
      const cells = notebook.widgets
        .map((cell, index) => (notebook.isSelectedOrActive(cell) ? index : -1))
        .filter(i => i >= 0);
      return { path: nb.context.path, kind: 'notebook', cells };
    }
    const ctx = this.docManager?.contextForWidget(widget);
    return ctx ? { path: ctx.path, kind: 'file', cells: [] } : null;
  }

  /** The context of the active main-area document, or null when there is none. */
  current(): IMessageContext | null {
    const widget = this.app.shell.currentWidget;
    if (!widget) {
      return null;
    }
    const nb = this.notebooks?.currentWidget;
    if (nb && nb === widget) {
      const notebook = nb.content;
      const cells = notebook.widgets
        .map((cell, index) => ({ cell, index }))
        .filter(({ cell }) => notebook.isSelectedOrActive(cell))
        .map(({ cell, index }) => ({
          id: cell.model.id,
          index,
          cell_type: cell.model.type,
          source: cell.model.sharedModel.getSource()
        }));
      return { path: nb.context.path, kind: 'notebook', cells };
    }
    const ctx = this.docManager?.contextForWidget(widget);
    if (ctx) {
      return { path: ctx.path, kind: 'file' };
    }
    return null;
  }
}
