/**
 * jsdom lacks a few browser globals that Lumino touches at import time.
 */

const g = globalThis as Record<string, unknown>;
if (typeof window !== 'undefined' && g.DragEvent === undefined) {
  g.DragEvent = class DragEvent extends MouseEvent {};
}
if (typeof window !== 'undefined' && !window.matchMedia) {
  window.matchMedia = (query: string) =>
    ({
      matches: false,
      media: query,
      onchange: null,
      addListener: () => undefined,
      removeListener: () => undefined,
      addEventListener: () => undefined,
      removeEventListener: () => undefined,
      dispatchEvent: () => false
    }) as MediaQueryList;
}
