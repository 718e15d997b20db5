/**
 * Think for Jupyter: the JupyterLab plugins.
 */

import type { JupyterFrontEndPlugin } from '@jupyterlab/application';

import { askThinkPlugin } from './askThink';
import { chatPlugin } from './chatPlugin';
import { inlineCompletionPlugin } from './inlineCompletion';
import { launcherPlugin } from './launcherPlugin';
import { remindersPlugin } from './reminders';
import { runInBackgroundPlugin } from './runInBackground';
import { thinkCellsPlugin } from './thinkCells';
import { untrustedOutputPlugin } from './untrustedOutput';

const plugins: JupyterFrontEndPlugin<void>[] = [
  askThinkPlugin,
  chatPlugin,
  inlineCompletionPlugin,
  launcherPlugin,
  remindersPlugin,
  runInBackgroundPlugin,
  thinkCellsPlugin,
  untrustedOutputPlugin
];

export default plugins;
