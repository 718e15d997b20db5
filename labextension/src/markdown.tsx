/**
 * Markdown rendered with JupyterLab's rendermime (sanitised, code highlighted).
 *
 * One renderer per message is kept for its lifetime; a new text while a render is in
 * flight only records the latest text, so a fast stream renders at most once at a time
 * and never queues stale renders. Inline code that looks like a workspace path opens it.
 */

import { Clipboard } from '@jupyterlab/apputils';
import { IRenderMime, MimeModel } from '@jupyterlab/rendermime';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { addBelowIcon, copyIcon, LabIcon } from '@jupyterlab/ui-components';
import React, { useEffect, useRef } from 'react';

import { looksLikePath } from './format';

/** Props of the Markdown view. */
export interface IMarkdownProps {
  text: string;
  rendermime: IRenderMimeRegistry;
  onOpenPath?: (path: string) => void;
  /** Copy (and insert) buttons on code blocks: answers have them, error notes not. */
  codeActions?: boolean;
  /** Put a code block in a new cell below the active one (the button is shown if set). */
  onInsertCode?: (code: string) => void;
}

/** Copy text to the clipboard (the async API where allowed, else JupyterLab's fallback). */
export async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    Clipboard.copyToSystem(text);
  }
}

function actionButton(
  icon: LabIcon,
  label: string,
  title: string,
  cls: string,
  run: (button: HTMLButtonElement) => void
): HTMLButtonElement {
  const button = document.createElement('button');
  button.className = `jp-ThinkLabelButton ${cls}`;
  button.title = title;
  button.setAttribute('aria-label', title);
  button.appendChild(icon.element({ tag: 'span' }));
  const text = document.createElement('span');
  text.textContent = label;
  button.appendChild(text);
  button.addEventListener('click', ev => {
    ev.preventDefault();
    run(button);
  });
  return button;
}

/** Copy and "Insert as cell below" buttons on every code block of a rendered answer. */
export function decorateCode(
  node: HTMLElement,
  insert?: (code: string) => void
): void {
  node.querySelectorAll('pre').forEach(pre => {
    if (pre.parentElement?.classList.contains('jp-ThinkCode')) {
      return;
    }
    const wrap = document.createElement('div');
    wrap.className = 'jp-ThinkCode';
    pre.replaceWith(wrap);
    wrap.appendChild(pre);
    const bar = document.createElement('div');
    bar.className = 'jp-ThinkCode-actions';
    const code = (): string => (pre.textContent ?? '').replace(/\n$/, '');
    bar.appendChild(
      actionButton(
        copyIcon,
        'Copy',
        'Copy this code',
        'jp-ThinkCode-copy',
        button => {
          void copyText(code()).then(() => {
            const label = button.lastElementChild as HTMLElement;
            label.textContent = 'Copied';
            window.setTimeout(() => (label.textContent = 'Copy'), 1500);
          });
        }
      )
    );
    if (insert) {
      bar.appendChild(
        actionButton(
          addBelowIcon,
          'Insert below',
          'Insert as a cell below the active cell of the notebook',
          'jp-ThinkCode-insert',
          () => insert(code())
        )
      );
    }
    wrap.appendChild(bar);
  });
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
  const { text, rendermime, onOpenPath, onInsertCode, codeActions } = props;
  const host = useRef<HTMLDivElement>(null);
  const renderer = useRef<IRenderMime.IRenderer | null>(null);
  const busy = useRef(false);
  const latest = useRef(text);
  const openRef = useRef(onOpenPath);
  openRef.current = onOpenPath;
  const insertRef = useRef(onInsertCode);
  insertRef.current = onInsertCode;
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
        if (codeActions) {
          decorateCode(
            r.node,
            insertRef.current ? code => insertRef.current?.(code) : undefined
          );
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
