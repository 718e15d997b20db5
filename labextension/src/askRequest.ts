/**
 * The request "Ask Think" sends (pure: unit tested), and its chat half: the chat bound to
 * the notebook, its policy asking before a re-run, the message with the cell, its error
 * and the cells around it. The JupyterLab side (the button, the command) is askThink.ts.
 */

import type { ISendOptions, ThinkApi } from './api';
import type { ChatStore } from './store';
import type { IAttachment, IMessageContext, ISession } from './tokens';

/** Command ids. */
export const AskCommandIDs = {
  askAboutCell: 'think:ask-about-cell',
  /** Registered by the chat plugin: send a prepared request (see IAskRequest). */
  ask: 'think:ask'
};

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
