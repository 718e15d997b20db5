/**
 * Inline completion: ghost text in notebook cells and files from the `fast` model role,
 * through JupyterLab 4's inline completer (`ICompletionProviderManager.registerInlineProvider`;
 * Tab accepts, as JupyterLab binds it).
 *
 * The provider asks `POST /api/think/complete` with the text around the cursor and the
 * notebook's previous cells; the server bounds the prompt and asks the model. It never asks
 * on every keystroke: JupyterLab's inline completer waits `debouncerDelay` after the last key
 * before it calls `fetch` (this provider's default is DEFAULT_DEBOUNCE_MS; the person may
 * change it in the Inline Completer settings), and the provider itself keeps a quiet time of
 * MIN_QUIET_MS whatever that setting says. A newer `fetch` aborts the request in flight, so
 * the server closes its model request too. With no model set up (the server says so) it
 * sends nothing and shows nothing; the setting `inlineCompletion` turns it off.
 */

import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  CompletionHandler,
  ICompletionProviderManager,
  IInlineCompletionContext,
  IInlineCompletionItem,
  IInlineCompletionList,
  IInlineCompletionProvider,
  InlineCompletionTriggerKind
} from '@jupyterlab/completer';
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

/** The plugin's id (its settings: schema/inline-completion.json). */
export const PLUGIN_ID = '@think/jupyter-think:inline-completion';
/** The provider's identifier in JupyterLab's Inline Completer settings; never changes. */
export const PROVIDER_ID = '@think/jupyter-think:inline';
/** How long after the last key JupyterLab waits before it asks (the provider's default). */
export const DEFAULT_DEBOUNCE_MS = 350;
/** The least quiet time between a key and a request, whatever the debouncer is set to. */
export const MIN_QUIET_MS = 250;
/** After the server said no model is set up, ask it again no sooner than this. */
export const RECHECK_MS = 30_000;
/** Previous cells sent at most (the server bounds their text). */
const MAX_CELLS = 50;

/** The body of `POST /api/think/complete`. */
export interface ICompletionBody {
  prefix: string;
  suffix: string;
  path: string;
  language: string;
  cells: string[];
  variables: string[];
  client: string;
}

/** Its answer. */
export interface ICompletionAnswer {
  completion: string;
  configured: boolean;
  model: string;
  model_ms: number;
  reason: string;
  error: string;
}

/**
 * The provider's two calls to the server:
 *
 *   const answer = await transport.complete(body, controller.signal);
 *   if (await transport.configured()) { ... }
 */
export interface ICompletionTransport {
  /** Ask for a completion; rejects with an AbortError when `signal` aborts. */
  complete(
    body: ICompletionBody,
    signal: AbortSignal
  ): Promise<ICompletionAnswer>;
  /** Whether the server has a model endpoint configured. */
  configured(): Promise<boolean>;
}

/** The transport over jupyter_server's authenticated REST (token and XSRF). */
export class RestTransport implements ICompletionTransport {
  constructor(
    readonly settings: ServerConnection.ISettings = ServerConnection.makeSettings()
  ) {}

  async complete(
    body: ICompletionBody,
    signal: AbortSignal
  ): Promise<ICompletionAnswer> {
    const url = URLExt.join(this.settings.baseUrl, 'api/think/complete');
    const init = { method: 'POST', body: JSON.stringify(body), signal };
    const r = await ServerConnection.makeRequest(url, init, this.settings);
    if (!r.ok) {
      throw new Error(`inline completion: HTTP ${r.status}`);
    }
    return (await r.json()) as ICompletionAnswer;
  }

  async configured(): Promise<boolean> {
    const url = URLExt.join(this.settings.baseUrl, 'api/think/model');
    const r = await ServerConnection.makeRequest(url, {}, this.settings);
    return r.ok && Boolean((await r.json()).configured);
  }
}

/** The parts of a notebook panel the provider reads (duck-typed, for tests too). */
interface INotebookLike {
  context?: { path?: string };
  content?: {
    activeCellIndex?: number;
    model?: {
      cells: Iterable<{
        type: string;
        sharedModel: { getSource(): string };
      }>;
    } | null;
  };
}

/** The path of the widget's document and the code of the cells above the active one. */
export function documentContext(widget: unknown): {
  path: string;
  cells: string[];
} {
  const panel = (widget ?? {}) as INotebookLike;
  const path = panel.context?.path ?? '';
  const content = panel.content;
  const cells: string[] = [];
  if (content?.model && typeof content.activeCellIndex === 'number') {
    let i = 0;
    for (const cell of content.model.cells) {
      if (i++ >= content.activeCellIndex) {
        break;
      }
      if (cell.type === 'code') {
        cells.push(cell.sharedModel.getSource());
      }
    }
  }
  return { path, cells: cells.slice(-MAX_CELLS) };
}

const EMPTY: IInlineCompletionList = { items: [] };

function isAbort(e: unknown): boolean {
  return e instanceof DOMException && e.name === 'AbortError';
}

function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

/** Counts of what the provider did (the bench and the tests read them). */
export interface IProviderStats {
  fetches: number;
  requests: number;
  aborted: number;
}

/** The Think inline completion provider. */
export class ThinkInlineProvider implements IInlineCompletionProvider {
  readonly identifier = PROVIDER_ID;
  readonly name = 'Think';
  /** Defaults JupyterLab's inline completer applies to this provider. */
  readonly schema = {
    default: { debouncerDelay: DEFAULT_DEBOUNCE_MS, timeout: 6000 }
  };
  /** The `inlineCompletion` setting. */
  enabled = true;
  readonly stats: IProviderStats = { fetches: 0, requests: 0, aborted: 0 };
  private debouncer = DEFAULT_DEBOUNCE_MS;
  private latest = 0;
  private inflight: AbortController | null = null;
  /** Whether the server has a model (null: not asked yet), and when to ask again. */
  private configured: boolean | null = null;
  private recheckAt = 0;
  private readonly client = Math.random().toString(36).slice(2, 12);

  constructor(
    private readonly transport: ICompletionTransport,
    private readonly now: () => number = () => Date.now()
  ) {}

  /** JupyterLab's settings of this provider (its debouncer delay among them). */
  configure(settings: { [property: string]: unknown }): void {
    const delay = Number(settings.debouncerDelay);
    this.debouncer = Number.isFinite(delay) && delay >= 0 ? delay : 0;
  }

  async fetch(
    request: CompletionHandler.IRequest,
    context: IInlineCompletionContext
  ): Promise<IInlineCompletionList<IInlineCompletionItem>> {
    this.stats.fetches++;
    const ticket = ++this.latest;
    this.abortInflight(); // the person typed on: the older answer would be stale
    if (!this.enabled) {
      return EMPTY;
    }
    if (this.configured === false && this.now() < this.recheckAt) {
      return EMPTY; // no model: nothing is sent
    }
    const automatic =
      context.triggerKind === InlineCompletionTriggerKind.Automatic;
    const quiet = automatic ? Math.max(0, MIN_QUIET_MS - this.debouncer) : 0;
    if (quiet > 0) {
      await sleep(quiet);
      if (ticket !== this.latest) {
        return EMPTY;
      }
    }
    if (this.configured !== true && !(await this.checkConfigured())) {
      return EMPTY;
    }
    if (ticket !== this.latest) {
      return EMPTY;
    }
    const { path, cells } = documentContext(context.widget);
    const body: ICompletionBody = {
      prefix: request.text.slice(0, request.offset),
      suffix: request.text.slice(request.offset),
      path,
      language: request.mimeType ?? '',
      cells,
      variables: [],
      client: this.client
    };
    const controller = new AbortController();
    this.inflight = controller;
    this.stats.requests++;
    let answer: ICompletionAnswer;
    try {
      answer = await this.transport.complete(body, controller.signal);
    } catch (e) {
      if (!isAbort(e)) {
        console.warn('Think inline completion failed', e);
      }
      return EMPTY;
    } finally {
      if (this.inflight === controller) {
        this.inflight = null;
      }
    }
    if (!answer.configured) {
      this.configured = false; // forgotten on the server since
      this.recheckAt = this.now() + RECHECK_MS;
    }
    if (ticket !== this.latest || !answer.completion) {
      return EMPTY;
    }
    return { items: [{ insertText: answer.completion }] };
  }

  private abortInflight(): void {
    if (this.inflight) {
      this.inflight.abort();
      this.inflight = null;
      this.stats.aborted++;
    }
  }

  /** Ask the server once whether a model is set up (again RECHECK_MS after a no). */
  private async checkConfigured(): Promise<boolean> {
    let configured = false;
    try {
      configured = await this.transport.configured();
    } catch (e) {
      console.warn('Think inline completion: model state unknown', e);
    }
    this.configured = configured;
    this.recheckAt = this.now() + RECHECK_MS;
    return configured;
  }
}

/** Registers the provider with JupyterLab's completion manager; reads its setting. */
export const inlineCompletionPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Think: inline completion (ghost text) from the fast model.',
  autoStart: true,
  requires: [ICompletionProviderManager],
  optional: [ISettingRegistry],
  activate: (
    _app: JupyterFrontEnd,
    manager: ICompletionProviderManager,
    registry: ISettingRegistry | null
  ) => {
    const provider = new ThinkInlineProvider(new RestTransport());
    manager.registerInlineProvider(provider);
    if (!registry) {
      return;
    }
    registry
      .load(PLUGIN_ID)
      .then(settings => {
        const apply = () => {
          provider.enabled =
            settings.get('inlineCompletion').composite !== false;
        };
        apply();
        settings.changed.connect(apply);
      })
      .catch(e => console.warn('Think inline completion settings', e));
  }
};
