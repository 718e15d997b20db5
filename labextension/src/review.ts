/**
 * Review mode in the page: a session's proposal (the agent's edits kept aside until a person
 * decides), read from `GET .../proposal`, decided with `POST .../proposal`, and the
 * session's review switch (`PATCH sessions/{id} {"review"}`).
 *
 * One `ReviewModel` follows the session the sidebar shows: it reads the proposal when the
 * session opens and again on each of its socket's `proposal` frames. The sidebar's panel
 * (reviewPanel.tsx) and the decorations in open notebooks (reviewInline.ts) both draw it.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

import type { ChatStore } from './store';

/** One hunk of a file's unified diff; its `id` is `<path>::hunk:<n>`. */
export interface IProposalHunk {
  id: string;
  header: string;
  lines: string[];
}

/** One cell of a notebook's proposal (nbdime's diff of base and proposed). */
export interface IProposalCell {
  /** `<path>::cell:<cell id>`. */
  id: string;
  cell_id: string;
  status: 'added' | 'modified' | 'removed';
  cell_type: string;
  base_source: string | null;
  source: string | null;
  source_diff: string;
  outputs_changed: boolean;
  /** The cell's position in the proposed notebook. */
  index: number;
}

/** One file of the proposal. */
export interface IProposalFile {
  path: string;
  kind: 'file' | 'notebook';
  status: 'modified' | 'created' | 'deleted';
  /** The live file was deleted or renamed by a person since. */
  missing: boolean;
  diff: string;
  hunks: IProposalHunk[];
  cells?: IProposalCell[];
}

/** `GET /api/think/sessions/{id}/proposal`. */
export interface IProposal {
  session_id: string;
  review: boolean;
  /** How the session's runs see the proposal: `overlay`, `copy` or `none`. */
  mode_detail: string;
  files: IProposalFile[];
}

/** A change that could not be merged, and why. */
export interface IConflict {
  id: string;
  path: string;
  detail: string;
}

/** The answer of `POST .../proposal`. */
export interface IDecision {
  accepted: string[];
  rejected: string[];
  conflicts: IConflict[];
  errors: { id: string; detail: string }[];
  proposal: IProposal;
}

/** What to decide: ids (a path, a cell's or a hunk's id), or every change. */
export type Choice = string[] | 'all';

/** The server calls of review mode (a seam: the tests give their own). */
export interface IReviewApi {
  /** The session's proposal. */
  get(sessionId: string): Promise<IProposal>;
  /** Accept and reject changes; the answer says what merged and what conflicted. */
  decide(
    sessionId: string,
    body: { accept: Choice; reject: Choice }
  ): Promise<IDecision>;
  /** Turn the session's review mode on or off. */
  setReview(sessionId: string, review: boolean): Promise<void>;
}

/** The review calls over jupyter_server's auth. */
export function reviewApi(
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): IReviewApi {
  const call = async <T>(
    sessionId: string,
    tail: string,
    method: string,
    body?: unknown
  ): Promise<T> => {
    const url = URLExt.join(
      settings.baseUrl,
      'api/think/sessions',
      encodeURIComponent(sessionId),
      tail
    );
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { 'Content-Type': 'application/json' };
    }
    const r = await ServerConnection.makeRequest(url, init, settings);
    const text = await r.text();
    const data = text ? JSON.parse(text) : null;
    // A decision that named nothing it could decide is refused with what went wrong: its
    // errors are shown next to what they are about, like conflicts.
    if (!r.ok && !(method === 'POST' && Array.isArray(data?.errors))) {
      throw new Error(`${r.status}: ${data?.message ?? r.statusText}`);
    }
    return data as T;
  };
  return {
    get: id => call<IProposal>(id, 'proposal', 'GET'),
    decide: (id, body) => call<IDecision>(id, 'proposal', 'POST', body),
    setReview: async (id, review) => {
      await call(id, '', 'PATCH', { review });
    }
  };
}

/** The kind of one line of a unified diff. */
export type DiffLineKind = 'add' | 'del' | 'ctx' | 'hunk' | 'file';

/** The lines of a unified diff with their kind (the `---`/`+++` header is `file`);
 * `headers: false` leaves that header out (a cell's names no file). */
export function diffLines(
  diff: string,
  headers = true
): { kind: DiffLineKind; text: string }[] {
  const lines = diff.split('\n');
  if (lines.length && lines[lines.length - 1] === '') {
    lines.pop();
  }
  const all: { kind: DiffLineKind; text: string }[] = lines.map(text => ({
    text,
    kind:
      text.startsWith('+++') || text.startsWith('---')
        ? 'file'
        : text.startsWith('@@')
          ? 'hunk'
          : text.startsWith('+')
            ? 'add'
            : text.startsWith('-')
              ? 'del'
              : 'ctx'
  }));
  return headers ? all : all.filter(l => l.kind !== 'file');
}

/** The number of changes a proposal holds (cells for notebooks, hunks or 1 for files). */
export function changeCount(p: IProposal | null): number {
  if (!p) {
    return 0;
  }
  return p.files.reduce(
    (n, f) =>
      n +
      (f.kind === 'notebook' && f.cells?.length
        ? f.cells.length
        : Math.max(1, f.hunks.length)),
    0
  );
}

/** What a view draws: the proposal, the last decision's trouble, and whether one runs. */
export interface IReviewSnapshot {
  sessionId: string | null;
  proposal: IProposal | null;
  /** Conflicts and errors of the last decision, shown until the next one. */
  conflicts: IConflict[];
  errors: { id: string; detail: string }[];
  busy: boolean;
  /** The last read or decision that failed (the server's message). */
  failure: string | null;
}

const EMPTY: IReviewSnapshot = {
  sessionId: null,
  proposal: null,
  conflicts: [],
  errors: [],
  busy: false,
  failure: null
};

/** The proposal of the session the chat store shows, kept fresh. */
export class ReviewModel {
  constructor(
    readonly store: ChatStore,
    readonly api: IReviewApi = reviewApi(store.api.settings)
  ) {
    store.subscribe(this._follow);
    store.frameReceived.connect(this._onFrame, this);
    this._follow();
  }

  /** The current snapshot (replaced on every change). */
  getSnapshot = (): IReviewSnapshot => this._snap;

  /** Subscribe to changes (for `useSyncExternalStore`). */
  subscribe = (listener: () => void): (() => void) => {
    const slot = (): void => listener();
    this._changed.connect(slot);
    return () => this._changed.disconnect(slot);
  };

  /** Emitted after every change. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Read the proposal again. */
  async refresh(): Promise<void> {
    const id = this._snap.sessionId;
    if (!id) {
      return;
    }
    const ticket = ++this._reads;
    try {
      const proposal = await this.api.get(id);
      // Only the newest read of the session still shown is kept.
      if (ticket === this._reads && this._snap.sessionId === id) {
        this.set({ proposal, failure: null });
      }
    } catch (e) {
      if (ticket === this._reads && this._snap.sessionId === id) {
        this.set({ failure: `Reading the proposal failed: ${errText(e)}` });
      }
    }
  }

  /** Accept and reject changes; conflicts and errors stay shown until the next decision. */
  async decide(accept: Choice, reject: Choice): Promise<IDecision | null> {
    const id = this._snap.sessionId;
    if (!id) {
      return null;
    }
    this.set({ busy: true, failure: null });
    try {
      const d = await this.api.decide(id, { accept, reject });
      ++this._reads; // the answer's proposal is newer than any read in flight
      if (this._snap.sessionId === id) {
        this.set({
          proposal: d.proposal,
          conflicts: d.conflicts ?? [],
          errors: d.errors ?? [],
          busy: false
        });
      }
      return d;
    } catch (e) {
      this.set({ busy: false, failure: `The decision failed: ${errText(e)}` });
      return null;
    }
  }

  /** Turn the session's review mode on or off. */
  async setReview(review: boolean): Promise<void> {
    const id = this._snap.sessionId;
    if (!id) {
      return;
    }
    try {
      await this.api.setReview(id, review);
      const session = this.store.state.session;
      if (session?.id === id) {
        this.store.dispatch({
          type: 'local/session',
          session: { ...session, review }
        });
      }
      await this.refresh();
    } catch (e) {
      this.set({ failure: `Switching review mode failed: ${errText(e)}` });
    }
  }

  /** Stop following the store. */
  dispose(): void {
    this.store.frameReceived.disconnect(this._onFrame, this);
  }

  private _follow = (): void => {
    const id = this.store.sessionId;
    if (id === this._snap.sessionId) {
      return;
    }
    ++this._reads;
    this._snap = { ...EMPTY, sessionId: id };
    this._changed.emit();
    void this.refresh();
  };

  private _onFrame(_: ChatStore, frame: { type: string }): void {
    const f = frame as { type: string; session_id?: string };
    if (
      f.type === 'proposal' &&
      (!f.session_id || f.session_id === this._snap.sessionId)
    ) {
      void this.refresh();
    }
  }

  private set(patch: Partial<IReviewSnapshot>): void {
    this._snap = { ...this._snap, ...patch };
    this._changed.emit();
  }

  private _snap: IReviewSnapshot = EMPTY;
  private _reads = 0;
  private _changed = new Signal<this, void>(this);
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
