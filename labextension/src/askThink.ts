/**
 * "Ask Think" on a notebook cell: a button on every error output (any kernel: python3,
 * think, others) and the command "Ask Think about this cell" (cell context menu, command
 * palette). It opens the sidebar's chat bound to the notebook (a chat session with the
 * notebook's path) and sends a message that carries the cell: its id and index, its
 * source, the traceback (ANSI codes stripped, bounded), the kernel's name and the
 * neighbouring cells. The cells go as a cells attachment, so the person sees a chip of
 * what was sent on their message; the error and the cell's place go as the context.
 *
 * The button is a rendermime renderer of `application/vnd.jupyter.error`, the bundle
 * JupyterLab builds for every error output next to its `application/vnd.jupyter.stderr`
 * text: ranked before the stock stderr renderer, it renders the same text with the same
 * renderer class and adds the button. So every output area that renders an error (a
 * notebook opened before or after, a re-run, a collaborator's run arriving through the
 * room) gets it with no bookkeeping of cells or outputs; outside notebooks (consoles)
 * the stylesheet hides it.
 *
 * The request itself (and sending it in the chat) is askRequest.ts.
 *
 * The agent fixes the cell with `edit_cell` through the notebook's room (the open tab
 * shows the edit live). Re-running the cell in the notebook's own kernel (`execute_cell`)
 * asks the person first: the chat's approval policy gets a rule for it.
 */

import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, showErrorMessage } from '@jupyterlab/apputils';
import { INotebookTracker, type NotebookPanel } from '@jupyterlab/notebook';
import {
  IRenderMime,
  IRenderMimeRegistry,
  RenderedError
} from '@jupyterlab/rendermime';

import {
  AskCommandIDs,
  askRequest,
  errorOf,
  type IAskRequest
} from './askRequest';

/** A cell widget of a notebook (`@jupyterlab/cells` is not a direct dependency). */
type Cell = NotebookPanel['content']['widgets'][number];
/** What a code cell's model adds: its outputs. */
interface IOutputs {
  length: number;
  get(index: number): { toJSON(): unknown };
}

export const ERROR_MIME = 'application/vnd.jupyter.error';
const STDERR_MIME = 'application/vnd.jupyter.stderr';
/** Before the stock stderr renderer (110), after ours for untrusted bundles (40). */
const ERROR_RANK = 105;

/** The request for a cell widget of a notebook panel. */
function requestFor(panel: NotebookPanel, cell: Cell): IAskRequest {
  const widgets = panel.content.widgets;
  const cells = widgets.map((c, index) => ({
    id: c.model.id,
    index,
    cell_type: c.model.type,
    source: c.model.sharedModel.getSource()
  }));
  const index = widgets.indexOf(cell);
  const outputs =
    cell.model.type === 'code'
      ? (cell.model as unknown as { outputs: IOutputs }).outputs
      : null;
  const json = outputs
    ? Array.from({ length: outputs.length }, (_, i) => outputs.get(i).toJSON())
    : [];
  const spec = panel.context.model.getMetadata('kernelspec') as
    { name?: string } | undefined;
  const kernel = panel.sessionContext.session?.kernel?.name ?? spec?.name ?? '';
  return askRequest({
    path: panel.context.path,
    kernel,
    cells,
    index,
    error: errorOf(json)
  });
}

/** The error text as JupyterLab shows it, and an "Ask Think" button under it. */
class AskableError extends RenderedError {
  constructor(
    options: IRenderMime.IRendererOptions,
    private readonly onAsk: (node: HTMLElement) => void
  ) {
    // The stderr text of the same bundle, drawn as the stock renderer draws it.
    super({ ...options, mimeType: STDERR_MIME });
  }

  async render(model: IRenderMime.IMimeModel): Promise<void> {
    await super.render(model);
    const button = document.createElement('button');
    button.className = 'jp-ThinkAskError jp-mod-styled';
    button.type = 'button';
    button.textContent = 'Ask Think';
    button.title =
      'Ask Think to fix this cell (the chat gets its source, this traceback, the ' +
      'kernel and the cells around it)';
    button.addEventListener('click', e => {
      e.stopPropagation();
      this.onAsk(this.node);
    });
    this.node.appendChild(button);
  }
}

/** The "Ask Think" button on error outputs, and "Ask Think about this cell". */
export const askThinkPlugin: JupyterFrontEndPlugin<void> = {
  id: '@think/jupyter-think:ask-think',
  description: 'Ask Think about a notebook cell and its error.',
  autoStart: true,
  requires: [IRenderMimeRegistry, INotebookTracker],
  optional: [ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    notebooks: INotebookTracker,
    palette: ICommandPalette | null
  ) => {
    const ask = async (panel: NotebookPanel, cell: Cell): Promise<void> => {
      try {
        await app.commands.execute(
          AskCommandIDs.ask,
          requestFor(panel, cell) as unknown as Record<string, never>
        );
      } catch (e) {
        void showErrorMessage('Think: asking failed', String(e));
      }
    };
    /** The notebook and cell whose DOM holds `node`. */
    const cellAt = (node: HTMLElement): [NotebookPanel, Cell] | null => {
      const panel = notebooks.find(p => p.node.contains(node));
      const cell = panel?.content.widgets.find(c => c.node.contains(node));
      return panel && cell ? [panel, cell] : null;
    };

    rendermime.addFactory(
      {
        safe: true,
        mimeTypes: [ERROR_MIME],
        defaultRank: ERROR_RANK,
        createRenderer: options =>
          new AskableError(options, node => {
            const found = cellAt(node);
            if (found) {
              void ask(...found);
            }
          })
      },
      ERROR_RANK
    );

    app.commands.addCommand(AskCommandIDs.askAboutCell, {
      label: 'Ask Think about this cell',
      caption:
        'Open a Think chat about this cell: its source, its error, the kernel and the cells around it',
      isEnabled: () => !!notebooks.currentWidget?.content.activeCell,
      execute: async () => {
        // From the context menu: the cell clicked; elsewhere, the active cell.
        const hit = app.contextMenuHitTest(n =>
          n.classList.contains('jp-Cell')
        );
        const found = hit ? cellAt(hit) : null;
        const panel = found?.[0] ?? notebooks.currentWidget;
        const cell = found?.[1] ?? panel?.content.activeCell;
        if (panel && cell) {
          await ask(panel, cell);
        }
      }
    });
    app.contextMenu.addItem({
      command: AskCommandIDs.askAboutCell,
      selector: '.jp-Notebook .jp-Cell',
      rank: 12
    });
    palette?.addItem({
      command: AskCommandIDs.askAboutCell,
      category: 'Think'
    });
  }
};
