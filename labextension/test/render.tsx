/**
 * Render React components into jsdom for unit tests, and a stand-in rendermime whose
 * Markdown renderer turns `**x**` into <strong> (enough to tell Markdown from raw text).
 */

import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import React, { act } from 'react';
import { createRoot, Root } from 'react-dom/client';

(
  globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }
).IS_REACT_ACT_ENVIRONMENT = true;

/** A mounted component: its container, and unmount. */
export interface IMounted {
  container: HTMLElement;
  root: Root;
  unmount(): void;
}

/** Mount `element` in a fresh container attached to the document. */
export function mount(element: React.ReactElement): IMounted {
  const container = document.createElement('div');
  document.body.appendChild(container);
  const root = createRoot(container);
  act(() => root.render(element));
  return {
    container,
    root,
    unmount: () => {
      act(() => root.unmount());
      container.remove();
    }
  };
}

/** Let pending promises and effects settle. */
export async function settle(): Promise<void> {
  await act(async () => {
    for (let i = 0; i < 5; i++) {
      await Promise.resolve();
    }
  });
}

/** Set an input's value as a user would (React listens to the native setter). */
export function type(
  el: HTMLInputElement | HTMLTextAreaElement,
  value: string
): void {
  const proto = Object.getPrototypeOf(el);
  const setter = Object.getOwnPropertyDescriptor(proto, 'value')?.set;
  act(() => {
    setter?.call(el, value);
    el.dispatchEvent(new Event('input', { bubbles: true }));
  });
}

/** Click an element. */
export function click(el: Element): void {
  act(() => {
    (el as HTMLElement).click();
  });
}

/** Press a key on an element. */
export function key(
  el: Element,
  k: string,
  init: KeyboardEventInit = {}
): void {
  act(() => {
    el.dispatchEvent(
      new KeyboardEvent('keydown', { key: k, bubbles: true, ...init })
    );
  });
}

/** A button by its visible text or aria-label. */
export function button(root: HTMLElement, name: string): HTMLButtonElement {
  const found = [...root.querySelectorAll('button')].find(
    b => b.textContent?.trim() === name || b.getAttribute('aria-label') === name
  );
  if (!found) {
    throw new Error(`no button ${name}`);
  }
  return found;
}

/** A rendermime whose Markdown renderer does bold and nothing else. */
export function fakeRendermime(): IRenderMimeRegistry {
  return {
    createRenderer: () => {
      const node = document.createElement('div');
      return {
        node,
        isDisposed: false,
        addClass: (c: string) => node.classList.add(c),
        dispose: () => undefined,
        renderModel: async (m: { data: Record<string, unknown> }) => {
          const md = String(m.data['text/markdown']);
          node.innerHTML =
            '<div class="jp-RenderedMarkdown">' +
            md.replace(/\*\*(.+?)\*\*/g, '<strong>$1</strong>') +
            '</div>';
        }
      };
    }
  } as unknown as IRenderMimeRegistry;
}
