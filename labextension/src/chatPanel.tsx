/**
 * The chat sidebar widget: hosts the chat, keeps notifications clear of it and queues the
 * requests of "Ask Think" until the chat takes them.
 */

import { ReactWidget } from '@jupyterlab/apputils';
import type { Widget } from '@lumino/widgets';
import React from 'react';

import type { IAskRequest } from './askRequest';
import { AppsContext, type IAppsContext } from './appsView';
import { ChatApp, type IChatPanelOptions, type IPendingAsk } from './chatApp';
import { thinkIcon } from './icons';
import { MemoryUndoContext } from './memoryUndo';

export type { IChatPanelOptions } from './chatApp';

/** How far from the right edge notifications keep (the open sidebar's width and tabs). */
const TOAST_INSET = '--jp-think-toast-inset';
/** A Lumino message (`@lumino/messaging` is not a direct dependency). */
type LuminoMessage = Parameters<Widget['processMessage']>[0];

/** The chat sidebar widget. */
export class ChatPanel extends ReactWidget {
  constructor(
    readonly options: IChatPanelOptions,
    private readonly _apps: IAppsContext | null = null
  ) {
    super();
    this.id = 'think-chat';
    this.addClass('jp-ThinkChat');
    this.title.icon = thinkIcon;
    this.title.caption = 'Think chat';
  }

  /** Re-render after a settings change. */
  settingsChanged(): void {
    this.update();
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    super.onResize(msg);
    this._placeToasts();
  }

  protected onAfterShow(msg: LuminoMessage): void {
    super.onAfterShow(msg);
    this._placeToasts();
  }

  protected onAfterHide(msg: LuminoMessage): void {
    super.onAfterHide(msg);
    this._placeToasts();
  }

  /**
   * JupyterLab shows notifications (a reminder's, anyone's) at the bottom right, where
   * this sidebar has its composer: while it is open they keep left of it (style/reminders.css).
   */
  private _placeToasts(): void {
    const style = document.body.style;
    if (!this.isVisible) {
      style.removeProperty(TOAST_INSET);
      return;
    }
    const left = this.node.getBoundingClientRect().left;
    const inset = Math.max(0, document.documentElement.clientWidth - left);
    style.setProperty(TOAST_INSET, `${Math.round(inset)}px`);
  }

  /** Send a prepared request (Ask Think) in the chat bound to its notebook. */
  ask(request: IAskRequest): Promise<void> {
    return new Promise((resolve, reject) => {
      this._asks.push({ request, resolve, reject });
      this.update(); // the chat takes it once rendered
    });
  }

  protected render(): JSX.Element {
    return (
      <MemoryUndoContext.Provider value={this._undoRemember}>
        <AppsContext.Provider value={this._apps}>
          <ChatApp
            {...this.options}
            asks={this._asks}
            settingsVersion={++this._version}
          />
        </AppsContext.Provider>
      </MemoryUndoContext.Provider>
    );
  }

  // Undo on a remember card: the line it added leaves the person's memory file.
  private _undoRemember = (line: string): Promise<string> => {
    const store = this.options.store;
    return store.api.undoRemember(line, store.sessionId ?? '');
  };

  private _version = 0;
  private _asks: IPendingAsk[] = [];
}
