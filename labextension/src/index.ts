/**
 * Think for Jupyter: the JupyterLab plugins.
 */

import type { JupyterFrontEndPlugin } from '@jupyterlab/application';

import { chatPlugin } from './chatPlugin';
import { launcherPlugin } from './launcherPlugin';

const plugins: JupyterFrontEndPlugin<void>[] = [chatPlugin, launcherPlugin];

export default plugins;
