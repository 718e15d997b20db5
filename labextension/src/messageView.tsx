/**
 * The message list: memoised messages, a render window for long sessions, and following
 * the conversation.
 *
 * Only the last `window` messages are mounted (older ones when the reader scrolls to the
 * top), so a session of thousands of messages paints as fast as a short one. The list
 * follows the stream while the reader is at the bottom; scrolling up to read stops that and
 * offers "Jump to latest"; sending a message always shows it.
 */

import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { caretDownIcon } from '@jupyterlab/ui-components';
import React, { useEffect, useLayoutEffect, useRef, useState } from 'react';

import type { ISiblings } from './branches';
import { ErrorNote } from './errorNote';
import { displayItems } from './longSession';
import { MessageItem } from './messageItem';
import { isRunning, type IChatState, type IToolCallState } from './reducer';
import type { RestoreWhat } from './rewind';
import { CompactionMarker } from './usageView';

/** How many messages are mounted at first, and how many more per step. */
export const INITIAL_WINDOW = 40;
const WINDOW_STEP = 100;
/** Within this many pixels of the bottom the list counts as at the bottom. */
const BOTTOM_SLACK = 40;
/** Within this many pixels of the top, earlier messages are mounted. */
const TOP_SLACK = 80;
/** Keys that scroll a list up (the reader leaves the end). */
const UP_KEYS = new Set(['ArrowUp', 'PageUp', 'Home']);

/** True if a scroller shows its end (the reader follows the conversation). */
export function atBottom(el: {
  scrollHeight: number;
  scrollTop: number;
  clientHeight: number;
}): boolean {
  return el.scrollHeight - el.scrollTop - el.clientHeight < BOTTOM_SLACK;
}

/** True if the newest message is one the user just sent (then the list shows it). */
export function sentByUser(
  state: IChatState,
  previousLast: string | undefined
): boolean {
  const last = state.order[state.order.length - 1];
  return (
    last !== undefined &&
    last !== previousLast &&
    state.messages[last]?.role === 'user'
  );
}

/** Props of the message list. */
export interface IMessageListProps {
  state: IChatState;
  rendermime: IRenderMimeRegistry;
  onOpenPath: (path: string) => void;
  onEdit: (messageId: string, content: string) => void;
  onLoadOlder: () => Promise<boolean>;
  loadWhole?: (resultId: string) => Promise<string>;
  onSetup?: () => void;
  onInsertCode?: (code: string) => void;
  /** Open the editor of message `id` (the Up key); `n` changes on every request. */
  editRequest?: { id: string; n: number } | null;
  /** A notebook's or `%%think` session: shown, never edited from the sidebar. */
  readOnly?: boolean;
  /** Messages with other versions on other branches, by id. */
  siblings?: ReadonlyMap<string, ISiblings>;
  onShowSibling?: (siblings: ISiblings, index: number, files: boolean) => void;
  onRewind?: (messageId: string, what: RestoreWhat) => void;
  /** A message to mount (a search hit), however far back it is. */
  reveal?: string | null;
}

/** The scrolling list of messages of a session. */
export function MessageList(props: IMessageListProps): JSX.Element {
  const {
    state,
    rendermime,
    onOpenPath,
    onEdit,
    onLoadOlder,
    loadWhole,
    onSetup,
    onInsertCode,
    editRequest,
    readOnly,
    siblings,
    onShowSibling,
    onRewind
  } = props;
  const [windowSize, setWindowSize] = useState(INITIAL_WINDOW);
  const scroller = useRef<HTMLDivElement>(null);
  const content = useRef<HTMLDivElement>(null);
  // Follows the stream (kept at the bottom) until the reader scrolls up.
  const stick = useRef(true);
  const [following, setFollowing] = useState(true);
  const loadingOlder = useRef(false);
  // The scrollTop this list set last: its own scroll events are not the reader's.
  const autoTop = useRef(-1);
  // While earlier messages mount, the message the reader was looking at stays put.
  const anchor = useRef<{ id: string; offset: number } | null>(null);
  const sessionId = state.session?.id;
  const lastSession = useRef(sessionId);
  const lastId = useRef<string | undefined>(
    state.order[state.order.length - 1]
  );
  if (lastSession.current !== sessionId) {
    lastSession.current = sessionId;
    stick.current = true;
    if (!following) {
      setFollowing(true);
    }
    if (windowSize !== INITIAL_WINDOW) {
      setWindowSize(INITIAL_WINDOW);
    }
  } else if (sentByUser(state, lastId.current)) {
    // What you send is shown, wherever you had scrolled to, and the answer followed.
    stick.current = true;
    if (!following) {
      setFollowing(true);
    }
  }
  lastId.current = state.order[state.order.length - 1];

  // Queued messages wait at the bottom, after the run in flight, until their run starts.
  const queued = state.order.filter(
    id => state.messages[id].status === 'queued'
  );
  const order = queued.length
    ? [
        ...state.order.filter(id => state.messages[id].status !== 'queued'),
        ...queued
      ]
    : state.order;
  const revealAt = props.reveal ? order.indexOf(props.reveal) : -1;
  if (revealAt >= 0 && revealAt < order.length - windowSize) {
    // A search hit: mount down from it (the reader is taken there, not to the end).
    stick.current = false;
    setWindowSize(order.length - revealAt + INITIAL_WINDOW / 2);
  }
  const start = Math.max(0, order.length - windowSize);
  const visible = order.slice(start);
  const idle = !isRunning(state);
  // The run's error goes after the message it belongs to: the last one that is not
  // waiting in the queue (unless that message already shows it).
  const err = state.error;
  const errorAfter = err
    ? [...order].reverse().find(id => state.messages[id].status !== 'queued')
    : undefined;
  const shownOnMessage =
    !!err &&
    !!errorAfter &&
    state.messages[errorAfter].status === 'error' &&
    state.messages[errorAfter].error === err.message;

  const renderItem = (id: string): JSX.Element => {
    const m = state.messages[id];
    const item = (
      <MessageItem
        key={id}
        message={m}
        tools={m.toolCallIds
          .map(t => state.toolCalls[t])
          .filter((t): t is IToolCallState => !!t)}
        rendermime={rendermime}
        onOpenPath={onOpenPath}
        onEdit={onEdit}
        editable={!readOnly && idle && !m.local && m.status !== 'queued'}
        loadWhole={loadWhole}
        onSetup={onSetup}
        onInsertCode={onInsertCode}
        editNow={editRequest?.id === id ? editRequest.n : 0}
        siblings={siblings?.get(id)}
        onShowSibling={onShowSibling}
        onRewind={
          !readOnly && !m.local && m.role === 'user' && m.status !== 'queued'
            ? onRewind
            : undefined
        }
      />
    );
    if (err && id === errorAfter && !shownOnMessage) {
      return (
        <React.Fragment key={id}>
          {item}
          <ErrorNote
            message={err.message}
            code={err.code}
            rendermime={rendermime}
            onSetup={onSetup}
          />
        </React.Fragment>
      );
    }
    return item;
  };

  /** Scroll to `top` as the list's own move (not the reader's). */
  const scrollOwn = (el: HTMLElement, top: number): void => {
    el.scrollTop = top;
    autoTop.current = el.scrollTop;
  };

  /** Keep the list where it should be: at the end, or with the anchor in place. */
  const place = (): void => {
    const el = scroller.current;
    if (!el) {
      return;
    }
    if (stick.current) {
      scrollOwn(el, el.scrollHeight);
      return;
    }
    const a = anchor.current;
    const node = a
      ? [...el.querySelectorAll<HTMLElement>('[data-message-id]')].find(
          n => n.dataset.messageId === a.id
        )
      : undefined;
    if (a && node) {
      const offset =
        node.getBoundingClientRect().top - el.getBoundingClientRect().top;
      if (Math.abs(offset - a.offset) >= 1) {
        scrollOwn(el, el.scrollTop + offset - a.offset);
      }
    }
  };

  useLayoutEffect(place);

  // Markdown, images and opened cards grow after React's commit: follow them too.
  useEffect(() => {
    const el = scroller.current;
    const inner = content.current;
    if (!el || !inner || typeof ResizeObserver === 'undefined') {
      return;
    }
    const observer = new ResizeObserver(() => placeRef.current());
    observer.observe(inner);
    // The reader takes over: the anchor no longer holds, and a move up stops following
    // at once (before its scroll event, which a growing answer may overtake).
    const release = (e: Event): void => {
      anchor.current = null;
      const up =
        (e instanceof WheelEvent && e.deltaY < 0) ||
        (e instanceof KeyboardEvent && e.target === el && UP_KEYS.has(e.key));
      if (up && el.scrollHeight > el.clientHeight) {
        stick.current = false;
        autoTop.current = -1;
        setFollowing(false);
      }
    };
    const events = ['wheel', 'touchstart', 'keydown', 'pointerdown'];
    for (const name of events) {
      el.addEventListener(name, release, { passive: true });
    }
    return () => {
      observer.disconnect();
      for (const name of events) {
        el.removeEventListener(name, release);
      }
    };
  }, []);
  const placeRef = useRef(place);
  placeRef.current = place;

  const hasOlder = start > 0 || state.nextCursor !== null;
  const showOlder = async (): Promise<void> => {
    const el = scroller.current;
    if (loadingOlder.current) {
      return;
    }
    loadingOlder.current = true;
    // Keep the message the reader was looking at (the first one shown) in place.
    const first = el?.querySelector<HTMLElement>('[data-message-id]');
    if (el && first) {
      anchor.current = {
        id: first.dataset.messageId ?? '',
        offset:
          first.getBoundingClientRect().top - el.getBoundingClientRect().top
      };
    }
    try {
      if (start > 0) {
        setWindowSize(windowSize + WINDOW_STEP);
      } else if (state.nextCursor !== null) {
        await onLoadOlder();
        setWindowSize(windowSize + WINDOW_STEP);
      }
    } finally {
      requestAnimationFrame(() => {
        loadingOlder.current = false;
      });
    }
  };

  const jumpToLatest = (): void => {
    stick.current = true;
    anchor.current = null;
    setFollowing(true);
    const el = scroller.current;
    if (el) {
      scrollOwn(el, el.scrollHeight);
    }
  };

  return (
    <div className="jp-ThinkTranscript">
      <div
        className="jp-ThinkMessages"
        ref={scroller}
        onScroll={e => {
          const el = e.currentTarget;
          if (Math.abs(el.scrollTop - autoTop.current) < 1) {
            return; // the list's own move (the content may have grown since)
          }
          autoTop.current = -1;
          const bottom = atBottom(el);
          stick.current = bottom;
          if (bottom !== following) {
            setFollowing(bottom);
          }
          if (el.scrollTop < TOP_SLACK && !bottom && hasOlder) {
            void showOlder();
          }
        }}
      >
        <div className="jp-ThinkMessages-content" ref={content}>
          {hasOlder ? (
            <button
              className="jp-ThinkLinkButton jp-ThinkMessages-older"
              onClick={() => void showOlder()}
            >
              Show earlier messages
            </button>
          ) : null}
          {order.length === 0 ? (
            <div className="jp-ThinkMessages-empty">
              Ask Think to read, write or run code in this workspace.
            </div>
          ) : null}
          {displayItems(
            visible,
            state.messages,
            state.compactions,
            start === 0 && state.nextCursor === null
          ).map(item =>
            item.kind === 'message' ? (
              renderItem(item.id)
            ) : (
              <CompactionMarker
                key={`compaction-${item.compaction.id}`}
                compaction={item.compaction}
                hiddenCount={item.hidden.length}
              >
                {open => (open ? item.hidden.map(renderItem) : null)}
              </CompactionMarker>
            )
          )}
          {err && !errorAfter ? (
            <ErrorNote
              message={err.message}
              code={err.code}
              rendermime={rendermime}
              onSetup={onSetup}
            />
          ) : null}
        </div>
      </div>
      {following || order.length === 0 ? null : (
        <button
          className="jp-Button jp-mod-styled jp-ThinkJumpLatest"
          aria-label="Jump to latest"
          title="Scroll to the newest message and follow the conversation again"
          onClick={jumpToLatest}
        >
          <caretDownIcon.react tag="span" />
          <span>Jump to latest</span>
        </button>
      )}
    </div>
  );
}
