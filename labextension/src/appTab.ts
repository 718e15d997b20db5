/**
 * A live app in a JupyterLab tab: the server's app proxy in a sandboxed iframe, titled with
 * the app's name, with a Reload button.
 *
 * The iframe's `sandbox` has `allow-scripts allow-forms` and no `allow-same-origin`: the
 * app runs in an opaque origin, so its script cannot reach `window.parent`'s document,
 * JupyterLab's cookies or its storage, even though the server serves it from Lab's origin.
 * While the app is not running the tab says so over the last page; when it runs again
 * (a Restart) the page is loaded anew.
 */

import { MainAreaWidget, ToolbarButton } from '@jupyterlab/apputils';
import { refreshIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { openUrl, type AppsModel, type IApp, type IAppRef } from './apps';

/** What the app's iframe may do: run its scripts and post its forms, nothing more. */
export const APP_SANDBOX = 'allow-scripts allow-forms';

/** The tab's content: the iframe and a note shown while the app is down. */
export class AppFrame extends Widget {
  constructor(
    readonly ref: IAppRef,
    private _url: string
  ) {
    super();
    this.addClass('jp-ThinkAppFrame');
    this._iframe = document.createElement('iframe');
    this._iframe.className = 'jp-ThinkAppFrame-iframe';
    this._iframe.setAttribute('sandbox', APP_SANDBOX);
    this._iframe.referrerPolicy = 'no-referrer';
    this._iframe.title = `App ${ref.name}`;
    this._iframe.src = _url;
    this._note = document.createElement('div');
    this._note.className = 'jp-ThinkAppFrame-note';
    this._note.setAttribute('role', 'status');
    this._note.hidden = true;
    this.node.append(this._note, this._iframe);
  }

  /** The address the frame shows. */
  get url(): string {
    return this._url;
  }

  /** Show the app at another address (its keyed one, once known). */
  setUrl(url: string): void {
    if (url !== this._url) {
      this._url = url;
      this.reload();
    }
  }

  /** The app's state as last shown. */
  get state(): string {
    return this._state;
  }

  /** Load the app's page again. */
  reload(): void {
    // Setting `src` navigates again even to the same address; the frame is cross-origin
    // to us (opaque), so its `location.reload()` is out of reach.
    this._iframe.src = this._url;
  }

  /** Show how the app stands; a down app gets a note, a revived one a fresh page. */
  showApp(app: IApp | undefined): void {
    const state = app?.state ?? 'gone';
    const was = this._state;
    this._state = state;
    this.node.dataset.state = state;
    if (state === 'running') {
      this._note.hidden = true;
      // Up again (a Restart): its page anew. Not while it starts: it may not answer yet.
      if (was !== '' && was !== 'running') {
        this.reload();
      }
      return;
    }
    if (state === 'starting') {
      this._note.textContent = `App ${this.ref.name} is starting…`;
      this._note.hidden = false;
      return;
    }
    const code =
      app?.exit_code !== null && app?.exit_code !== undefined
        ? ` (exit ${app.exit_code})`
        : '';
    this._note.textContent =
      state === 'gone'
        ? `App ${this.ref.name} is no longer listed in its session.`
        : `App ${this.ref.name} ${state}${code}. Restart it from the Think sidebar.`;
    this._note.hidden = false;
  }

  private _iframe: HTMLIFrameElement;
  private _note: HTMLDivElement;
  private _state = '';
}

/** A tab id per app (a session's app opens in one tab). */
export function appTabId(ref: IAppRef): string {
  return `think-app-${ref.sessionId}-${ref.name}`;
}

/** The app tabs: one per app, kept in step with the apps model. */
export class AppTabs {
  constructor(
    private readonly model: AppsModel,
    private readonly addToMain: (w: Widget) => void,
    private readonly activate: (id: string) => void
  ) {
    model.changed.connect(this._update, this);
  }

  /** Open (or bring forward) the tab of an app. */
  open(ref: IAppRef): MainAreaWidget<AppFrame> {
    const id = appTabId(ref);
    let tab = this._tabs.get(id);
    if (!tab || tab.isDisposed) {
      tab = this._create(ref);
      this._tabs.set(id, tab);
      tab.disposed.connect(() => this._tabs.delete(id));
    }
    if (!tab.isAttached) {
      this.addToMain(tab);
    }
    this.activate(tab.id);
    return tab;
  }

  private _create(ref: IAppRef): MainAreaWidget<AppFrame> {
    const app = this.model.find(ref.sessionId, ref.name);
    const content = new AppFrame(
      ref,
      openUrl(this.model.settings.baseUrl, ref, app)
    );
    const tab = new MainAreaWidget({ content });
    tab.id = appTabId(ref);
    tab.addClass('jp-ThinkAppTab');
    tab.title.label = ref.name;
    tab.title.caption = `Think app ${ref.name}`;
    tab.title.closable = true;
    tab.toolbar.addItem(
      'reload',
      new ToolbarButton({
        icon: refreshIcon,
        label: 'Reload',
        tooltip: `Load the app ${ref.name} again`,
        onClick: () => content.reload()
      })
    );
    if (app) {
      content.showApp(app);
    }
    return tab;
  }

  private _update(): void {
    for (const tab of this._tabs.values()) {
      const { ref } = tab.content;
      if (ref.sessionId === this.model.sessionId) {
        const app = this.model.find(ref.sessionId, ref.name);
        if (app?.state === 'running') {
          tab.content.setUrl(openUrl(this.model.settings.baseUrl, ref, app));
        }
        tab.content.showApp(app);
      }
    }
  }

  private _tabs = new Map<string, MainAreaWidget<AppFrame>>();
}
