/**
 * Think's notebook cells read as what they are: a `%%think` cell of a Python notebook is a
 * request in Markdown, so its editor highlights Markdown (not Python); an empty cell of a
 * Think notebook shows a hint of what to type (style/cells.css draws it).
 *
 * The notebook sets every code cell's MIME type from its kernel's language (on load, on a
 * kernel change, on insertion); this plugin puts a `%%think` cell's back after each.
 */

import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { INotebookTracker, type NotebookPanel } from '@jupyterlab/notebook';

import { cellMimeType, EMPTY_CLASS, MARKDOWN_MIME } from './cellKinds';

/** True if a notebook runs on the Think kernel (its cells are requests). */
export function isThinkNotebook(panel: NotebookPanel): boolean {
  const running = panel.sessionContext.session?.kernel?.name;
  if (running) {
    return running === 'think';
  }
  const spec = panel.model?.getMetadata('kernelspec') as
    { name?: string } | undefined;
  return spec?.name === 'think';
}

/** What a cell model offers here (a code cell's model, typed loosely across versions). */
interface ICellModelLike {
  type: string;
  mimeType: string;
  sharedModel: { getSource(): string };
  contentChanged: { connect(cb: () => void): void };
  mimeTypeChanged: { connect(cb: () => void): void };
}

/** Follow one notebook: its code cells' MIME types and the empty cells' hint. */
function follow(panel: NotebookPanel): void {
  const seen = new WeakSet<object>();
  const notebook = panel.content;

  const hint = (): void => {
    const think = isThinkNotebook(panel);
    for (const cell of notebook.widgets) {
      const empty =
        think &&
        cell.model.type === 'code' &&
        !cell.model.sharedModel.getSource().trim();
      cell.node.classList.toggle(EMPTY_CLASS, empty);
    }
  };

  const watch = (): void => {
    const cells = notebook.model?.cells;
    if (!cells) {
      return;
    }
    for (let i = 0; i < cells.length; i++) {
      const model = cells.get(i) as unknown as ICellModelLike;
      if (model.type !== 'code' || seen.has(model)) {
        continue;
      }
      seen.add(model);
      const apply = (): void => {
        const want = cellMimeType(
          model.sharedModel.getSource(),
          notebook.codeMimetype
        );
        // Only a `%%think` cell, or one that stopped being one, is changed: the others
        // keep whatever the notebook gave them.
        if (
          model.mimeType !== want &&
          (want === MARKDOWN_MIME || model.mimeType === MARKDOWN_MIME)
        ) {
          model.mimeType = want;
        }
      };
      model.contentChanged.connect(apply);
      model.mimeTypeChanged.connect(apply);
      apply();
    }
    hint();
  };

  void panel.context.ready.then(() => {
    watch();
    notebook.model?.cells.changed.connect(() => requestAnimationFrame(watch));
    notebook.model?.contentChanged.connect(hint);
    panel.sessionContext.kernelChanged.connect(hint);
  });
}

/** The plugin: every notebook's `%%think` cells and empty Think cells. */
export const thinkCellsPlugin: JupyterFrontEndPlugin<void> = {
  id: '@think/jupyter-think:cells',
  description:
    '%%think cells highlight as Markdown; empty Think cells show a hint.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, notebooks: INotebookTracker) => {
    notebooks.forEach(follow);
    notebooks.widgetAdded.connect((_, panel) => follow(panel));
  }
};
