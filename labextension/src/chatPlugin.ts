/**
 * The chat plugin: the right sidebar, the action log and their commands.
 */

import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { MainAreaWidget, showErrorMessage } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { INotebookTracker, NotebookActions } from '@jupyterlab/notebook';
import {
  IRenderMimeRegistry,
  RenderMimeRegistry
} from '@jupyterlab/rendermime';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { listIcon } from '@jupyterlab/ui-components';

import { ActionLogPanel } from './actionLog';
import { AppsModel } from './apps';
import { AppTabs } from './appTab';
import { AskCommandIDs, type IAskRequest } from './askRequest';
import { ThinkApi } from './api';
import { ChatPanel } from './chatPanel';
import { ContextProvider } from './context';
import { ReviewModel } from './review';
import { InlineReview } from './reviewInline';
import { ChatStore } from './store';
import type { IThinkSettings } from './tokens';
import { inertSanitizer } from './inertSanitizer';

/** Command ids. */
export const CommandIDs = {
  openChat: 'think:open-chat',
  openActionLog: 'think:open-action-log',
  openSession: 'think:open-session',
  newNotebook: 'think:new-notebook',
  ask: AskCommandIDs.ask
};

export const PLUGIN_ID = '@think/jupyter-think:chat';

const DEFAULTS: IThinkSettings = {
  model: '',
  endpoint: '',
  debugEvents: false,
  attachContext: false
};

/** The chat sidebar plugin. */
export const chatPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'The Think chat sidebar, action log and debug events.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [
    IDocumentManager,
    INotebookTracker,
    ISettingRegistry,
    ILayoutRestorer
  ],
  activate: (
    app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    docManager: IDocumentManager | null,
    notebooks: INotebookTracker | null,
    settingRegistry: ISettingRegistry | null,
    restorer: ILayoutRestorer | null
  ) => {
    const api = new ThinkApi();
    const store = new ChatStore(api);
    // The open session's proposal: the sidebar lists it, open notebooks show its cells.
    const review = new ReviewModel(store);
    if (notebooks) {
      new InlineReview(review, notebooks);
    }
    let settings: IThinkSettings = { ...DEFAULTS };

    const openPath = (path: string): void => {
      if (!docManager) {
        return;
      }
      // Only open files that exist: inline code that merely looks like a path is common.
      app.serviceManager.contents
        .get(path, { content: false })
        .then(() => docManager.openOrReveal(path))
        .catch(() => console.info(`think: ${path} does not exist`));
    };

    const chatRendermime = rendermime.clone({
      sanitizer: inertSanitizer(rendermime.sanitizer),
      resolver: new RenderMimeRegistry.UrlResolver({
        path: PathExt.join('', 'think-chat.md'),
        contents: app.serviceManager.contents
      }),
      linkHandler: {
        handleLink: (node: HTMLElement, path: string) => {
          node.addEventListener('click', ev => {
            ev.preventDefault();
            openPath(path);
          });
        }
      }
    });

    // "Insert as cell below" on code blocks of answers: into the notebook last active.
    const insertCell = (code: string): void => {
      const nb = notebooks?.currentWidget;
      if (!nb) {
        void showErrorMessage(
          'Think: no notebook',
          'Open a notebook first: the code goes in a new cell below its active cell.'
        );
        return;
      }
      NotebookActions.insertBelow(nb.content);
      nb.content.activeCell?.model.sharedModel.setSource(code);
      app.shell.activateById(nb.id);
    };

    let actionLog: MainAreaWidget<ActionLogPanel> | null = null;
    // Live apps: the open session's list, and a main-area tab per app opened.
    const apps = new AppsModel(store, api.settings);
    const appTabs = new AppTabs(
      apps,
      w => app.shell.add(w, 'main'),
      id => app.shell.activateById(id)
    );
    const panel = new ChatPanel(
      {
        store,
        rendermime: chatRendermime,
        context: new ContextProvider(app, docManager, notebooks),
        settings: () => settings,
        openPath,
        insertCell,
        review,
        openActionLog: () => void app.commands.execute(CommandIDs.openActionLog)
      },
      { model: apps, open: ref => void appTabs.open(ref) }
    );
    app.shell.add(panel, 'right', { rank: 600 });
    restorer?.add(panel, 'think-chat');

    app.commands.addCommand(CommandIDs.openChat, {
      label: 'Open Think chat',
      caption: 'Open the Think chat sidebar',
      icon: args => (args.isPalette ? undefined : panel.title.icon),
      execute: () => app.shell.activateById(panel.id)
    });

    // "Ask Think" on a cell (askThink.ts) sends its request in the chat of its notebook.
    app.commands.addCommand(CommandIDs.ask, {
      label: 'Ask Think (a prepared request)',
      caption:
        'Send a request (args: see IAskRequest) in the chat of its notebook',
      execute: args => {
        app.shell.activateById(panel.id);
        return panel.ask(args as unknown as IAskRequest);
      }
    });

    // A reminder's notification opens its session here (reminders.ts).
    app.commands.addCommand(CommandIDs.openSession, {
      label: 'Open a Think session',
      caption: 'Open a session (args: id) in the Think sidebar',
      execute: async args => {
        const session = await api.getSession(String(args.id ?? ''));
        store.open(session);
        app.shell.activateById(panel.id);
      }
    });

    app.commands.addCommand(CommandIDs.openActionLog, {
      label: 'Open Think action log',
      caption: 'What the agent did in the current chat session',
      icon: args => (args.isPalette ? undefined : listIcon),
      execute: () => {
        if (!actionLog || actionLog.isDisposed) {
          actionLog = new MainAreaWidget({
            content: new ActionLogPanel(store)
          });
          actionLog.id = 'think-action-log-main';
          actionLog.title.label = 'Think action log';
          actionLog.title.icon = listIcon;
          actionLog.title.closable = true;
        }
        if (!actionLog.isAttached) {
          app.shell.add(actionLog, 'main', { mode: 'split-bottom' });
        }
        app.shell.activateById(actionLog.id);
      }
    });

    if (settingRegistry) {
      settingRegistry
        .load(PLUGIN_ID)
        .then(s => {
          const apply = (): void => {
            settings = {
              ...DEFAULTS,
              ...(s.composite as Partial<IThinkSettings>)
            };
            panel.settingsChanged();
          };
          apply();
          s.changed.connect(apply);
        })
        .catch(e => console.warn('think: settings not loaded', e));
    }
  }
};
