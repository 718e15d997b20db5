/**
 * Time travel in a chat panel: the branch tree and the rewinds of the open session, wired
 * to its chat store (what the panel passes to its message list, note and composer).
 */

import {
  useCallback,
  useEffect,
  useRef,
  useState,
  useSyncExternalStore
} from 'react';

import { BranchTree, type ISiblings } from './branches';
import { isRunning } from './reducer';
import { RewindModel, type RestoreWhat, type RewindState } from './rewind';
import type { ChatStore } from './store';

/** What the panel renders of time travel. */
export interface ITimeTravel {
  siblings: ReadonlyMap<string, ISiblings>;
  rewind: RewindState | null;
  /** Text for the composer (a rewound message's), or null. */
  fill: { text: string; n: number } | null;
  onShowSibling: (siblings: ISiblings, index: number, files: boolean) => void;
  onRewind: (messageId: string, what: RestoreWhat) => void;
  dismiss: () => void;
}

/** Time travel of the session `store` shows; `report` shows an error of an action. */
export function useTimeTravel(
  store: ChatStore,
  report: (what: string) => (e: unknown) => void
): ITimeTravel {
  const [tree] = useState(() => new BranchTree(store.api));
  const [rewinds] = useState(
    () =>
      new RewindModel({
        get sessionId() {
          return store.sessionId;
        },
        running: () => isRunning(store.state),
        rewind: (id, messageId, what) => store.api.rewind(id, messageId, what),
        reload: () => store.reload()
      })
  );
  const siblings = useSyncExternalStore(tree.subscribe, tree.getSnapshot);
  const rewind = useSyncExternalStore(rewinds.subscribe, rewinds.getSnapshot);
  const [fill, setFill] = useState<{ text: string; n: number } | null>(null);
  const reportRef = useRef(report);
  reportRef.current = report;

  const refresh = useCallback(() => {
    tree
      .refresh(store.sessionId)
      .catch(e => console.warn('think: branches not loaded', e));
  }, [store, tree]);

  // The tree changes with a new user message (the first of a branch, from any tab) and
  // with a reconnect's history; a session opened elsewhere has a tree of its own.
  const sessionId = store.state.session?.id ?? null;
  useEffect(() => {
    rewinds.dismiss();
    refresh();
  }, [sessionId]);
  useEffect(() => {
    const onFrame = (
      _: unknown,
      frame: { type: string; message?: unknown }
    ) => {
      const role = (frame.message as { role?: string } | undefined)?.role;
      if (frame.type === 'message' && role === 'user') {
        refresh();
        // The next message moves on: the last rewind's note has been read.
        if (rewinds.state?.phase !== 'working') {
          rewinds.dismiss();
        }
      } else if (frame.type === 'history') {
        refresh();
      }
    };
    store.frameReceived.connect(onFrame);
    const onText = (_: unknown, text: string) =>
      setFill(f => ({ text, n: (f?.n ?? 0) + 1 }));
    rewinds.textBack.connect(onText);
    return () => {
      store.frameReceived.disconnect(onFrame);
      rewinds.textBack.disconnect(onText);
    };
  }, [store, rewinds, refresh]);

  const onShowSibling = useCallback(
    (s: ISiblings, index: number, files: boolean) => {
      if (files) {
        // Reported in the rewind's note: what was restored, removed and kept.
        void rewinds.switchWithFiles(() => tree.show(s, index, true));
        return;
      }
      tree
        .show(s, index)
        .then(() => store.reload())
        .catch(reportRef.current('switching branches'));
    },
    [store, tree, rewinds]
  );
  const onRewind = useCallback(
    (messageId: string, what: RestoreWhat) => {
      void rewinds.rewind(messageId, what).then(refresh);
    },
    [rewinds, refresh]
  );
  const dismiss = useCallback(() => rewinds.dismiss(), [rewinds]);
  return { siblings, rewind, fill, onShowSibling, onRewind, dismiss };
}
