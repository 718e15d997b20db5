/**
 * Sessions as trees, in the sidebar: which messages have siblings, and switching to them.
 *
 * The server keeps every branch of a conversation (an edited and resent message, or a
 * conversation rewind, starts one). A message's siblings are the messages that follow the
 * same message on some branch's line; the sidebar shows "‹ 2 / 3 ›" on such a message and
 * makes the chosen sibling's branch current, so the model sees that branch from then on;
 * asked to, the server takes the files to that branch's state as well.
 */

import { ISignal, Signal } from '@lumino/signaling';

import type { ThinkApi } from './api';
import type { IRewindResult } from './rewind';

/** One branch of a session (`GET sessions/{id}/branches`). */
export interface IBranch {
  id: string;
  parent_id: string | null;
  /** The message the branch leaves from (null: the start of the conversation). */
  fork_id: string | null;
  /** Its first own message, and the last message of its line. */
  first_id: string | null;
  last_id: string | null;
  /** Messages of its line. */
  count: number;
  current: boolean;
  created_at: number;
}

/** A message's place among its siblings, and the branch that shows each of them. */
export interface ISiblings {
  /** 0-based place of the message among `ids`. */
  index: number;
  /** The sibling message ids, oldest first. */
  ids: string[];
  /** For each sibling, the branch to make current to show it. */
  branches: string[];
}

/** A branch's line: its message ids with their seqs, oldest first. */
export interface ILine {
  branch: IBranch;
  messages: { id: string; seq: number }[];
}

const START = '';

/**
 * The siblings of every message that has some, from the branches' lines. For a sibling on
 * several lines, the branch shown is the current one if it is among them, else the newest.
 */
export function siblingsOf(lines: ILine[]): Map<string, ISiblings> {
  const children = new Map<string, Map<string, number>>();
  const shownBy = new Map<string, IBranch>();
  for (const { branch, messages } of lines) {
    let parent = START;
    for (const m of messages) {
      const kids = children.get(parent) ?? new Map<string, number>();
      kids.set(m.id, m.seq);
      children.set(parent, kids);
      const had = shownBy.get(m.id);
      if (
        !had ||
        (!had.current &&
          (branch.current || branch.created_at >= had.created_at))
      ) {
        shownBy.set(m.id, branch);
      }
      parent = m.id;
    }
  }
  const out = new Map<string, ISiblings>();
  for (const kids of children.values()) {
    if (kids.size < 2) {
      continue;
    }
    const ids = [...kids.entries()].sort((a, b) => a[1] - b[1]).map(e => e[0]);
    const branches = ids.map(id => shownBy.get(id)?.id ?? '');
    ids.forEach((id, index) => out.set(id, { index, ids, branches }));
  }
  return out;
}

/** Page size of a branch's line (the server's largest page). */
const LINE_PAGE = 500;

/** The branches of the open session and their siblings, reloaded when they may change. */
export class BranchTree {
  constructor(private readonly api: ThinkApi) {}

  /** Siblings by message id (empty for a session that never branched). */
  get siblings(): ReadonlyMap<string, ISiblings> {
    return this._siblings;
  }

  /** Emitted when the siblings change. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Subscribe to changes (for `useSyncExternalStore`). */
  subscribe = (listener: () => void): (() => void) => {
    const slot = (): void => listener();
    this._changed.connect(slot);
    return () => this._changed.disconnect(slot);
  };

  /** Snapshot getter for `useSyncExternalStore`. */
  getSnapshot = (): ReadonlyMap<string, ISiblings> => this._siblings;

  /** Read the branches of session `id` again (null: none open). */
  async refresh(id: string | null): Promise<void> {
    const ticket = ++this._ticket;
    this._session = id;
    if (!id) {
      this.set(new Map());
      return;
    }
    const branches = await this.api.listBranches(id);
    if (branches.length < 2) {
      if (ticket === this._ticket) {
        this._shape = '';
        this.set(new Map());
      }
      return;
    }
    // Messages added to a line have no siblings until a branch leaves from them (its
    // first message arrives): the lines are read again only when the branches change.
    const shape = JSON.stringify([
      id,
      branches.map(b => [b.id, b.first_id, b.current])
    ]);
    if (shape === this._shape) {
      return;
    }
    const lines = await Promise.all(
      branches.map(async branch => ({
        branch,
        messages: await this.line(id, branch.id)
      }))
    );
    if (ticket === this._ticket) {
      this._shape = shape;
      this.set(siblingsOf(lines));
    }
  }

  /** Make the branch that shows sibling `index` of `siblings` current; with `files`, the
   * files go to its state too and the answer says what changed (else null). */
  async show(
    siblings: ISiblings,
    index: number,
    files = false
  ): Promise<IRewindResult | null> {
    const id = this._session;
    const branch = siblings.branches[index];
    if (!id || !branch) {
      return null;
    }
    const out = await this.api.switchBranch(id, branch, files);
    await this.refresh(id);
    return out;
  }

  private async line(
    id: string,
    branch: string
  ): Promise<{ id: string; seq: number }[]> {
    const out: { id: string; seq: number }[] = [];
    let before: string | number | null = null;
    for (;;) {
      const page = await this.api.listMessages(
        id,
        before,
        LINE_PAGE,
        undefined,
        branch
      );
      out.unshift(
        ...page.messages.map(m => ({ id: String(m.id), seq: Number(m.seq) }))
      );
      if (page.next_cursor === null || !page.messages.length) {
        return out;
      }
      before = page.next_cursor;
    }
  }

  private set(next: Map<string, ISiblings>): void {
    if (next.size === 0 && this._siblings.size === 0) {
      return;
    }
    this._siblings = next;
    this._changed.emit();
  }

  private _siblings: ReadonlyMap<string, ISiblings> = new Map();
  private _session: string | null = null;
  private _shape = '';
  private _ticket = 0;
  private _changed = new Signal<this, void>(this);
}
