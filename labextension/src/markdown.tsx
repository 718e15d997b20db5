/**
 * Markdown rendered with JupyterLab's rendermime (sanitised, code highlighted).
 *
 * One renderer per message is kept for its lifetime; a new text while a render is in
 * flight only records the latest text, so a fast stream renders at most once at a time
 * and never queues stale renders. Inline code that looks like a workspace path opens it.
 */

import { IRenderMime, MimeModel } from '@jupyterlab/rendermime';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import React, { useEffect, useRef } from 'react';

import { looksLikePath } from './format';

/** Props of the Markdown view. */
export interface IMarkdownProps {
  text: string;
  rendermime: IRenderMimeRegistry;
  onOpenPath?: (path: string) => void;
}

function linkPaths(node: HTMLElement, open: (path: string) => void): void {
  node.querySelectorAll('code').forEach(code => {
    if (code.closest('pre') || code.dataset.thinkPath !== undefined) {
      return;
    }
    const text = code.textContent ?? '';
    if (!looksLikePath(text)) {
      return;
    }
    const path = text.trim().replace(/^\.\//, '').replace(/:\d+$/, '');
    code.dataset.thinkPath = path;
    code.classList.add('jp-ThinkPath');
    code.setAttribute('role', 'link');
    code.setAttribute('tabindex', '0');
    code.title = `Open ${path}`;
    code.addEventListener('click', () => open(path));
    code.addEventListener('keydown', ev => {
      if (ev.key === 'Enter') {
        open(path);
      }
    });
  });
}

/** Renders `text` as Markdown; re-renders only when `text` changes. */
export const Markdown = React.memo(function Markdown(
  props: IMarkdownProps
): JSX.Element {
  const { text, rendermime, onOpenPath } = props;
  const host = useRef<HTMLDivElement>(null);
  const renderer = useRef<IRenderMime.IRenderer | null>(null);
  const busy = useRef(false);
  const latest = useRef(text);
  const openRef = useRef(onOpenPath);
  openRef.current = onOpenPath;
  latest.current = text;

  useEffect(() => {
    if (!renderer.current && host.current) {
      renderer.current = rendermime.createRenderer('text/markdown');
      renderer.current.addClass('jp-ThinkMarkdown-rendered');
      host.current.appendChild(renderer.current.node);
    }
    const r = renderer.current;
    if (!r || busy.current) {
      return; // the render in flight picks up `latest` when it ends
    }
    const render = async (): Promise<void> => {
      busy.current = true;
      let done = '';
      while (done !== latest.current && !r.isDisposed) {
        done = latest.current;
        await r.renderModel(
          new MimeModel({ data: { 'text/markdown': done }, trusted: false })
        );
        if (openRef.current) {
          linkPaths(r.node, p => openRef.current?.(p));
        }
      }
      busy.current = false;
    };
    void render().catch(e => {
      busy.current = false;
      console.error('think: markdown render failed', e);
    });
  }, [text, rendermime]);

  useEffect(
    () => () => {
      renderer.current?.dispose();
      renderer.current = null;
    },
    []
  );

  return <div className="jp-ThinkMarkdown" ref={host} />;
});
