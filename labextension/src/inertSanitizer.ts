/**
 * The chat sidebar's HTML sanitiser: JupyterLab's, then no remote resource left to fetch.
 *
 * JupyterLab's sanitiser keeps `<img src="https://...">` (it does not check `src`), so a
 * model's answer could make the page load a URL made of the session's data without a click.
 * Here a remote image becomes a link to it, other remote media attributes are dropped, and so
 * are styles that could load something (`url(...)`, `image-set`, `@import`, escapes) and
 * forms (a click on their button would send their fields somewhere).
 */

import type { IRenderMime } from '@jupyterlab/rendermime';

const REMOTE = /^\s*(?:[a-z][a-z0-9+.-]*:|\/\/|\\\\)/i;
const INLINE_IMAGE = /^\s*data:image\//i;
const MEDIA_ATTRS = ['src', 'srcset', 'poster', 'background'];
const LOADING_STYLE = /url|image|import|\\/i;

/** True when loading `url` would leave this server (inline images stay). */
export function isRemote(url: string): boolean {
  return REMOTE.test(url) && !INLINE_IMAGE.test(url);
}

/** Remove what the sanitised `html` would fetch from elsewhere (pure given a DOMParser). */
export function withoutRemoteMedia(html: string): string {
  if (
    !/\s(?:src|srcset|poster|background|style)\s*=|<style|<form/i.test(html)
  ) {
    return html;
  }
  const doc = new DOMParser().parseFromString(html, 'text/html');
  for (const el of Array.from(doc.body.querySelectorAll('style, form'))) {
    el.remove();
  }
  for (const el of Array.from(doc.body.querySelectorAll('[style]'))) {
    if (LOADING_STYLE.test(el.getAttribute('style') ?? '')) {
      el.removeAttribute('style');
    }
  }
  const selector = MEDIA_ATTRS.map(a => `[${a}]`).join(',');
  for (const el of Array.from(doc.body.querySelectorAll(selector))) {
    const src = el.getAttribute('src') ?? '';
    if (el.tagName === 'IMG' && isRemote(src)) {
      const link = doc.createElement('a');
      link.setAttribute('href', src);
      link.textContent = `[image: ${el.getAttribute('alt') || src}]`;
      el.replaceWith(link);
      continue;
    }
    for (const attr of MEDIA_ATTRS) {
      const value = el.getAttribute(attr);
      if (value !== null && (attr === 'srcset' || isRemote(value))) {
        el.removeAttribute(attr);
      }
    }
  }
  return doc.body.innerHTML;
}

/** Wrap a sanitiser so that its output fetches nothing remote. */
export function inertSanitizer(
  base: IRenderMime.ISanitizer
): IRenderMime.ISanitizer {
  return {
    sanitize: (dirty, options) =>
      withoutRemoteMedia(base.sanitize(dirty, options)),
    getAutolink: () => base.getAutolink?.() ?? true,
    allowNamedProperties: base.allowNamedProperties
  };
}
