/**
 * Launcher and command-palette entries: "Open Think chat" in the launcher (a Think notebook
 * already has its card there, from the kernel spec), both in the palette: one launcher item
 * per action.
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { ILauncher } from '@jupyterlab/launcher';

import { CommandIDs } from './chatPlugin';
import { thinkIcon } from './icons';

/** The kernel name of the agent kernel. */
export const THINK_KERNEL = 'think';

/** The launcher / palette plugin. */
export const launcherPlugin: JupyterFrontEndPlugin<void> = {
  id: '@think/jupyter-think:launcher',
  description: 'New Think notebook and Open Think chat entries.',
  autoStart: true,
  requires: [IDocumentManager],
  optional: [ILauncher, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    docManager: IDocumentManager,
    launcher: ILauncher | null,
    palette: ICommandPalette | null
  ) => {
    app.commands.addCommand(CommandIDs.newNotebook, {
      label: args =>
        args.isLauncher ? 'Think notebook' : 'New Think notebook',
      caption: 'Create a notebook that runs the Think agent kernel',
      icon: args => (args.isPalette ? undefined : thinkIcon),
      execute: async args => {
        const cwd = (args.cwd as string) ?? '';
        const model = await docManager.newUntitled({
          path: cwd,
          type: 'notebook'
        });
        return docManager.open(model.path, 'Notebook', { name: THINK_KERNEL });
      }
    });

    if (launcher) {
      launcher.add({
        command: CommandIDs.openChat,
        category: 'Other',
        rank: 101
      });
    }
    if (palette) {
      for (const command of [
        CommandIDs.newNotebook,
        CommandIDs.openChat,
        CommandIDs.openActionLog
      ]) {
        palette.addItem({ command, category: 'Think' });
      }
    }
  }
};
