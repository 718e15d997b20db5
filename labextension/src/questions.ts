/**
 * The agent's questions (`ask_user`) in the open session: loaded from the server when a
 * session opens (so a reload shows them again, answered ones too), added by
 * `question_asked` frames, settled by `question_answered` frames whichever surface answered
 * (sidebar, notebook, API). Pending ones are cards above the composer; an answered one is
 * a folded line on its `ask_user` call in the transcript, as a decided approval is.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { ThinkApiError } from './api';
import type { ChatStore } from './store';

/** One question as the sidebar shows it. */
export interface IQuestion {
  id: string;
  question: string;
  options: string[];
  allowText: boolean;
  status: 'pending' | 'answered' | 'closed';
  answer: string;
  user: string;
  source: string;
  /** A subagent's question: the task it works on. */
  taskId: string;
  /** The `ask_user` call that asked it (its card in the transcript shows the answer). */
  callId: string;
}

type Frame = { type: string; [k: string]: unknown };

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : [];
}

/** Pure: apply one frame to the list of questions. */
export function applyQuestionFrame(
  list: readonly IQuestion[],
  frame: Frame
): readonly IQuestion[] {
  if (frame.type === 'question_asked') {
    const id = String(frame.id);
    if (list.some(q => q.id === id)) {
      return list; // asked again by a resumed run: already shown
    }
    return [
      ...list,
      {
        id,
        question: String(frame.question ?? ''),
        options: strings(frame.options),
        allowText: !!frame.allow_text,
        status: 'pending',
        answer: '',
        user: '',
        source: '',
        taskId: String(frame.task_id ?? ''),
        callId: String(frame.call_id ?? '')
      }
    ];
  }
  if (frame.type === 'question_answered') {
    const id = String(frame.id);
    const found = list.find(q => q.id === id);
    if (!found || found.status !== 'pending') {
      return list;
    }
    const answer = String(frame.answer ?? '');
    const settled: IQuestion = {
      ...found,
      status: answer ? 'answered' : 'closed',
      answer,
      user: String(frame.user ?? ''),
      source: String(frame.source ?? '')
    };
    return list.map(q => (q.id === id ? settled : q));
  }
  return list;
}

/** A question as the REST API returns it (GET .../questions). */
export function questionFromRow(row: Record<string, unknown>): IQuestion {
  const status =
    row.status === 'answered' || row.status === 'closed'
      ? row.status
      : 'pending';
  return {
    id: String(row.id),
    question: String(row.question ?? ''),
    options: strings(row.options),
    allowText: !!row.allow_text,
    status,
    answer: String(row.answer ?? ''),
    user: String(row.user ?? ''),
    source: String(row.source ?? ''),
    taskId: String(row.task_id ?? ''),
    callId: String(row.call_id ?? '')
  };
}

/** The questions still waiting for an answer. */
export function pendingQuestions(list: readonly IQuestion[]): IQuestion[] {
  return list.filter(q => q.status === 'pending');
}

/** The answered (or closed) question of tool call `callId`, if there is one. */
export function answeredFor(
  list: readonly IQuestion[],
  callId: string
): IQuestion | null {
  return list.find(q => q.callId === callId && q.status !== 'pending') ?? null;
}

/** Follows the chat store's session and frames; answers through the REST API. */
export class QuestionsModel {
  constructor(readonly store: ChatStore) {
    store.frameReceived.connect((_, frame) => {
      this.set(applyQuestionFrame(this._list, frame as Frame));
    });
    store.subscribe(() => this.follow());
    this.follow();
  }

  /** Subscribe to changes (for `useSyncExternalStore`). */
  subscribe = (listener: () => void): (() => void) => {
    this._listeners.add(listener);
    return () => this._listeners.delete(listener);
  };

  /** Snapshot getter for `useSyncExternalStore`. */
  getSnapshot = (): readonly IQuestion[] => this._list;

  /** Answer a question; the card settles from the server's reply (409: someone was first). */
  async answer(id: string, answer: string): Promise<void> {
    const session = this._session;
    if (!session) {
      return;
    }
    const row = await this.call(
      `sessions/${encodeURIComponent(session)}/questions/${encodeURIComponent(id)}`,
      'POST',
      { answer, source: 'sidebar' }
    );
    this.set(
      applyQuestionFrame(this._list, { ...row, type: 'question_answered', id })
    );
  }

  private follow(): void {
    const id = this.store.sessionId;
    if (id !== this._session) {
      this._session = id;
      this.set([]);
      void this.load(id);
    }
  }

  private async load(id: string | null): Promise<void> {
    if (!id) {
      return;
    }
    try {
      const r = await this.call(
        `sessions/${encodeURIComponent(id)}/questions`,
        'GET'
      );
      if (this._session !== id) {
        return;
      }
      let list = this._list;
      for (const row of (r.questions ?? []) as Record<string, unknown>[]) {
        const q = questionFromRow(row);
        // Answered ones too: the transcript shows each on its call's card.
        if (!list.some(x => x.id === q.id)) {
          list = [...list, q];
        }
      }
      this.set(list);
    } catch (e) {
      console.warn('think: questions not loaded', e);
    }
  }

  private async call(
    path: string,
    method: string,
    body?: unknown
  ): Promise<Record<string, any>> {
    const settings = this.store.api.settings;
    const url = URLExt.join(settings.baseUrl, 'api/think', path);
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { 'Content-Type': 'application/json' };
    }
    const response = await ServerConnection.makeRequest(url, init, settings);
    const text = await response.text();
    let data: any = {};
    try {
      data = text ? JSON.parse(text) : {};
    } catch {
      data = { message: text };
    }
    if (!response.ok) {
      const msg = data?.message ?? data?.reason ?? response.statusText;
      throw new ThinkApiError(response.status, `${response.status}: ${msg}`);
    }
    return data;
  }

  private set(list: readonly IQuestion[]): void {
    if (list === this._list) {
      return;
    }
    this._list = list;
    for (const l of this._listeners) {
      l();
    }
  }

  private _list: readonly IQuestion[] = [];
  private _session: string | null = null;
  private _listeners = new Set<() => void>();
}
