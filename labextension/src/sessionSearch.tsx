/**
 * Search over every session of the workspace: a box under the session picker, its hits
 * (session, date, snippet with the matches marked), and a click that opens the session at
 * the hit (`GET /api/think/search`).
 */

import { searchIcon } from '@jupyterlab/ui-components';
import React, { useRef, useState } from 'react';

import type { ISearchHit, ISearchResult, ThinkApi } from './api';
import type { ChatStore } from './store';

/** Pages of older history read at most to reach a hit. */
const MAX_PAGES = 200;

/** The snippet as text and `<mark>` elements (never HTML: the snippet is stored text). */
export function markedSnippet(hit: ISearchHit): (string | JSX.Element)[] {
  const out: (string | JSX.Element)[] = [];
  let last = 0;
  hit.spans.forEach(([start, end], i) => {
    if (start < last || end > hit.snippet.length) {
      return;
    }
    out.push(hit.snippet.slice(last, start));
    out.push(<mark key={i}>{hit.snippet.slice(start, end)}</mark>);
    last = end;
  });
  out.push(hit.snippet.slice(last));
  return out;
}

/** Once the opened session's history arrived, read older pages until it holds the hit's
 * message (a hit in a subagent's conversation, or on a branch left, is not in it). */
export async function loadUntil(
  store: ChatStore,
  hit: ISearchHit
): Promise<void> {
  if (hit.facet || hit.off_branch) {
    return;
  }
  const arrived = (): boolean =>
    store.sessionId !== hit.session_id || store.getSnapshot().order.length > 0;
  if (!arrived()) {
    await new Promise<void>(resolve => {
      const timer = window.setTimeout(done, 10000);
      const stop = store.subscribe(() => arrived() && done());
      function done(): void {
        window.clearTimeout(timer);
        stop();
        resolve();
      }
    });
  }
  for (let n = 0; n < MAX_PAGES; n++) {
    if (
      store.sessionId !== hit.session_id ||
      store.getSnapshot().messages[hit.message_id] ||
      !(await store.loadOlder())
    ) {
      return;
    }
  }
}

/** Scroll to a message once the chat shows it, and mark it for a moment. */
export function revealMessage(root: HTMLElement, messageId: string): void {
  const selector = `[data-message-id="${CSS.escape(messageId)}"]`;
  const show = (): boolean => {
    const el = root.querySelector<HTMLElement>(selector);
    if (!el) {
      return false;
    }
    el.scrollIntoView({ block: 'center' });
    el.classList.add('jp-ThinkSearch-found');
    window.setTimeout(() => el.classList.remove('jp-ThinkSearch-found'), 4000);
    return true;
  };
  if (show()) {
    return;
  }
  // The session's history arrives over its socket: wait for the message, not forever
  // (an older message than the first page, or a subagent's, is not in the chat).
  const observer = new MutationObserver(() => {
    if (show()) {
      observer.disconnect();
    }
  });
  observer.observe(root, { childList: true, subtree: true });
  window.setTimeout(() => observer.disconnect(), 10000);
}

/** Props of the search box. */
export interface ISessionSearchProps {
  api: ThinkApi;
  /** Open the hit's session (and show its message). */
  onOpen: (hit: ISearchHit) => void;
}

/** The search box and its hits. */
export function SessionSearch(props: ISessionSearchProps): JSX.Element {
  const [text, setText] = useState('');
  const [result, setResult] = useState<ISearchResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  const asked = useRef(0);

  const search = (q: string): void => {
    const n = ++asked.current;
    if (!q.trim()) {
      setResult(null);
      setError(null);
      return;
    }
    props.api
      .searchSessions(q, 20)
      .then(r => {
        if (n === asked.current) {
          setResult(r);
          setError(null);
        }
      })
      .catch(e => {
        if (n === asked.current) {
          setResult(null);
          setError(String(e.message ?? e));
        }
      });
  };

  return (
    <div className="jp-ThinkSearch">
      <div className="jp-ThinkSearch-row">
        <searchIcon.react tag="span" className="jp-ThinkSearch-icon" />
        <input
          className="jp-ThinkSearch-input"
          type="search"
          aria-label="Search all sessions"
          placeholder="Search all sessions"
          value={text}
          onChange={e => setText(e.target.value)}
          onKeyDown={e => {
            if (e.key === 'Enter') {
              search(text);
            } else if (e.key === 'Escape') {
              setText('');
              search('');
            }
          }}
        />
      </div>
      {error ? (
        <div className="jp-ThinkSearch-error" role="alert">
          {error}
        </div>
      ) : null}
      {result ? (
        <div className="jp-ThinkSearch-results" aria-label="Search results">
          {result.notice ? (
            <div className="jp-ThinkSearch-notice">{result.notice}</div>
          ) : null}
          {result.hits.length === 0 ? (
            <div className="jp-ThinkSearch-empty">No message matches.</div>
          ) : null}
          {result.hits.map(hit => (
            <button
              key={hit.message_id}
              className="jp-ThinkSearch-hit"
              data-session-id={hit.session_id}
              data-hit={hit.message_id}
              onClick={() => props.onOpen(hit)}
            >
              <span className="jp-ThinkSearch-where">
                {hit.title || 'Untitled'} ·{' '}
                {new Date(hit.created_at * 1000).toLocaleString()} ·{' '}
                {hit.tool ?? hit.role}
                {hit.facet ? ' (subagent)' : ''}
              </span>
              <span className="jp-ThinkSearch-snippet">
                {markedSnippet(hit)}
              </span>
            </button>
          ))}
        </div>
      ) : null}
    </div>
  );
}
