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

import type { ISendOptions, ThinkApi } from './api';
import type { ChatStore } from './store';
import type { IAttachment, IMessageContext, ISession } from './tokens';

/** A cell widget of a notebook (`@jupyterlab/cells` is not a direct dependency). */
type Cell = NotebookPanel['content']['widgets'][number];
/** What a code cell's model adds: its outputs. */
interface IOutputs {
  length: number;
  get(index: number): { toJSON(): unknown };
}

/** Command ids. */
export const AskCommandIDs = {
  askAboutCell: 'think:ask-about-cell',
  /** Registered by the chat plugin: send a prepared request (see IAskRequest). */
  ask: 'think:ask'
};

export const ERROR_MIME = 'application/vnd.jupyter.error';
const STDERR_MIME = 'application/vnd.jupyter.stderr';
/** Before the stock stderr renderer (110), after ours for untrusted bundles (40). */
const ERROR_RANK = 105;

/** Bounds of what goes to the model, in characters. */
export const MAX_TRACEBACK = 8000;
export const MAX_SOURCE = 20000;
export const MAX_NEIGHBOUR = 2000;
/** Cells before and after the one asked about. */
export const NEIGHBOURS = 2;

/** A cell as the request carries it. */
export interface IAskCell {
  id: string;
  index: number;
  cell_type: string;
  source: string;
}

/** An error output of a cell. */
export interface IAskError {
  ename: string;
  evalue: string;
  traceback: string;
}

/** What the chat plugin's `think:ask` command takes. */
export interface IAskRequest {
  /** The chat session's title, if a new one is made. */
  title: string;
  /** The notebook the chat is bound to (a chat with this path is reused). */
  path: string;
  text: string;
  context: Record<string, unknown>;
  attachments: IAttachment[];
  /** Approval rules the chat needs (merged into its session's policy). */
  rules: { tool: string; action: string }[];
}

// CSI sequences (colours, cursor moves) and OSC sequences (hyperlinks, titles).
const ANSI =
  // eslint-disable-next-line no-control-regex
  /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g;

/** Text without its ANSI escape sequences (IPython colours its tracebacks). */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

/**
 * At most `max` characters: the head and the tail, with how much was cut between them
 * (the end of a traceback names the error, its start the call that led there).
 */
export function bounded(text: string, max: number): string {
  if (text.length <= max) {
    return text;
  }
  const head = Math.floor(max / 4);
  const tail = max - head;
  const cut = text.length - head - tail;
  return `${text.slice(0, head)}\n… (${cut} characters cut) …\n${text.slice(-tail)}`;
}

/** The error of a cell's outputs (the last one), from their nbformat JSON. */
export function errorOf(outputs: readonly unknown[]): IAskError | null {
  for (let i = outputs.length - 1; i >= 0; i--) {
    const o = outputs[i] as Record<string, unknown> | null;
    if (o && o.output_type === 'error') {
      const lines = Array.isArray(o.traceback) ? o.traceback.map(String) : [];
      const ename = String(o.ename ?? '');
      const evalue = String(o.evalue ?? '');
      const text = stripAnsi(lines.join('\n')) || `${ename}: ${evalue}`;
      return {
        ename: stripAnsi(ename),
        evalue: stripAnsi(evalue),
        traceback: bounded(text, MAX_TRACEBACK)
      };
    }
  }
  return null;
}

/** The request for cell `index` of a notebook's `cells` (pure). */
export function askRequest(opts: {
  path: string;
  kernel: string;
  cells: readonly IAskCell[];
  index: number;
  error: IAskError | null;
}): IAskRequest {
  const { path, kernel, cells, index, error } = opts;
  const cell = cells[index];
  const name = path.split('/').pop() || path;
  const first = Math.max(0, index - NEIGHBOURS);
  const shown = cells.slice(first, index + NEIGHBOURS + 1).map(c => ({
    id: c.id,
    cell_type: c.cell_type,
    source: bounded(c.source, c.index === index ? MAX_SOURCE : MAX_NEIGHBOUR)
  }));
  const where = `cell ${index + 1} (id ${cell.id}) of ${path}`;
  const kernelText = kernel ? `, kernel ${kernel}` : '';
  const text = error
    ? `Fix the error in ${where}${kernelText}: ${error.ename}: ${error.evalue}\n` +
      'Edit that cell with edit_cell, then re-run it with execute_cell (I am asked ' +
      'first) and check its new output.'
    : `Help me with ${where}${kernelText}.`;
  return {
    title: `${error ? 'Fix' : 'Ask'}: ${name}, cell ${index + 1}`.slice(0, 60),
    path,
    text,
    context: {
      path,
      kind: 'notebook',
      kernel,
      cells: [{ ...cell, source: bounded(cell.source, MAX_SOURCE) }],
      ...(error ? { error } : {}),
      neighbours: shown
        .filter(c => c.id !== cell.id)
        .map(c => ({
          ...c,
          index: cells.findIndex(x => x.id === c.id)
        }))
    },
    attachments: [{ kind: 'cells', path, cells: shown }],
    rules: [{ tool: 'execute_cell', action: 'ask' }]
  };
}

/** A session's approval prop with `rules` added (each once; the rest kept). */
export function withRules(
  approval: unknown,
  rules: IAskRequest['rules']
): Record<string, unknown> {
  const base =
    approval && typeof approval === 'object'
      ? { ...(approval as Record<string, unknown>) }
      : {};
  const have = Array.isArray(base.rules) ? [...base.rules] : [];
  for (const rule of rules) {
    if (
      !have.some(
        r =>
          r &&
          typeof r === 'object' &&
          r.tool === rule.tool &&
          r.action === rule.action &&
          !r.arg
      )
    ) {
      have.push(rule);
    }
  }
  return { ...base, rules: have };
}

/** What the chat half of a request needs of the sidebar. */
export interface IAskChat {
  api: ThinkApi;
  store: ChatStore;
  /** The sessions, read again. */
  refresh: () => Promise<ISession[]>;
  /** Show this session in the sidebar. */
  select: (session: ISession) => void;
  /** The person's model choices for messages. */
  options: ISendOptions;
}

/**
 * Send `request` in the chat bound to its notebook: the chat session with that path (made
 * when there is none), its policy asking before `execute_cell`, shown in the sidebar.
 */
export async function sendAsk(
  chat: IAskChat,
  request: IAskRequest
): Promise<void> {
  const sessions = await chat.refresh();
  let session =
    sessions.find(
      s => (s.kind ?? 'chat') === 'chat' && s.path === request.path
    ) ?? null;
  if (!session) {
    session = await chat.api.createSession({
      title: request.title,
      path: request.path
    });
  }
  const options = (session.options ?? {}) as Record<string, unknown>;
  const patched = await chat.api.setApprovalPolicy(
    session.id,
    withRules(options.approval, request.rules)
  );
  session = { ...session, ...patched };
  await chat.refresh();
  chat.select(session);
  await chat.store.send(request.text, {
    ...chat.options,
    context: request.context as IMessageContext,
    attachments: request.attachments
  });
}

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
