/**
 * "Run in background (Think job)" on a `%%bash` or `%%python` cell of a Think notebook
 * (cell context menu, command palette): the cell becomes a `%%think_job` cell and runs. Its
 * code then runs as a background job of the notebook's session, with a job's limits (hours,
 * not a step's minutes) and a bounded log; the cell follows its progress, the chat sidebar
 * lists it with a Stop, and interrupting the cell stops following, not the job.
 *
 * The cell keeps what ran (jobCell.ts writes it), so running it again starts the job again.
 */

import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import {
  INotebookTracker,
  NotebookActions,
  type NotebookPanel
} from '@jupyterlab/notebook';

import { backgroundSource } from './jobCell';
import { isThinkNotebook } from './thinkCells';

/** The command's id. */
export const RUN_IN_BACKGROUND = 'think:run-in-background';

/** The plugin: the command, in the cell context menu and the palette. */
export const runInBackgroundPlugin: JupyterFrontEndPlugin<void> = {
  id: '@think/jupyter-think:run-in-background',
  description:
    'Run a %%bash or %%python cell of a Think notebook as a background job.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    palette: ICommandPalette | null
  ) => {
    const target = (): NotebookPanel | null => {
      const panel = notebooks.currentWidget;
      return panel && isThinkNotebook(panel) ? panel : null;
    };
    // From the context menu: the cell clicked (a right click does not make it the
    // active one); from elsewhere: the active cell.
    const targetCell = (panel: NotebookPanel): number => {
      const hit = app.contextMenuHitTest(n => n.classList.contains('jp-Cell'));
      const widgets = panel.content.widgets;
      const index = hit ? widgets.findIndex(c => c.node === hit) : -1;
      return index >= 0 ? index : panel.content.activeCellIndex;
    };
    const converted = (panel: NotebookPanel, index: number): string | null => {
      const cell = panel.content.widgets[index];
      if (!cell || cell.model.type !== 'code') {
        return null;
      }
      return backgroundSource(cell.model.sharedModel.getSource());
    };

    app.commands.addCommand(RUN_IN_BACKGROUND, {
      label: 'Run in background (Think job)',
      caption:
        'Run this %%bash or %%python cell as a background job of the session: it goes on past the step and the turn; the sidebar lists it with a Stop',
      isVisible: () => target() !== null,
      isEnabled: () => {
        const panel = target();
        return !!panel && converted(panel, targetCell(panel)) !== null;
      },
      execute: async () => {
        const panel = target();
        const index = panel ? targetCell(panel) : -1;
        const source = panel ? converted(panel, index) : null;
        if (!panel || source === null) {
          return;
        }
        const notebook = panel.content;
        const cell = notebook.widgets[index];
        if (source !== cell.model.sharedModel.getSource()) {
          cell.model.sharedModel.setSource(source);
        }
        // Run this cell alone, whatever else was selected; a kernel still starting would
        // leave the cell unrun (the run needs its connection).
        notebook.activeCellIndex = index;
        notebook.deselectAll();
        await panel.sessionContext.ready;
        await NotebookActions.run(notebook, panel.sessionContext);
      }
    });
    app.contextMenu.addItem({
      command: RUN_IN_BACKGROUND,
      selector: '.jp-Notebook .jp-CodeCell',
      rank: 13
    });
    palette?.addItem({ command: RUN_IN_BACKGROUND, category: 'Think' });
  }
};
