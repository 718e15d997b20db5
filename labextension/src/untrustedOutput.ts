/**
 * Rich output of sandboxed code (HTML, SVG, JavaScript, widgets...), shown without access to
 * the page.
 *
 * The kernel sends such bundles as `application/vnd.think.untrusted+json` (`{data: bundle}`)
 * instead of their own MIME types, because JupyterLab runs the HTML and scripts of outputs of
 * cells the person ran, with the person's token in reach. Saved notebooks keep this type, so
 * reopening one renders through here too.
 *
 * - HTML goes into an `<iframe sandbox="allow-scripts">` without `allow-same-origin`: an
 *   opaque origin that cannot reach the page, its storage or its cookies. Its content
 *   security policy runs only our one script (a nonce the content cannot know), which puts
 *   the HTML in from a template (so nothing in it runs), drops what could navigate or load a
 *   nested page (`meta`, `iframe`, `object`, `base`...), cancels link clicks, and reports the
 *   height. Images, styles and fonts may only be inline (`data:`): nothing the HTML names is
 *   fetched, so it cannot carry data out. Its own scripts never run: they could still
 *   navigate the frame to a URL made of the notebook's data.
 * - SVG shows as an image (`<img>` never runs an SVG's scripts nor fetches what it links);
 *   PNG / JPEG / GIF as images; anything else as its text.
 */

import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { IRenderMime, IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { Widget } from '@lumino/widgets';

/** The MIME type the kernel wraps untrusted bundles in. */
export const UNTRUSTED_MIME = 'application/vnd.think.untrusted+json';

/** Frame heights in pixels: taller content scrolls inside the frame. */
export const MIN_HEIGHT = 16;
export const MAX_HEIGHT = 1200;

const IMAGES = ['image/png', 'image/jpeg', 'image/gif'];
const TEXTS = [
  'text/plain',
  'text/markdown',
  'text/latex',
  'application/javascript'
];

/** How one bundle is shown. */
export type View =
  | { kind: 'html'; html: string }
  | { kind: 'image'; src: string }
  | { kind: 'text'; text: string };

/** Choose what to show of a wrapped bundle (pure). */
export function chooseView(value: unknown): View {
  const data = bundleOf(value);
  const html = data['text/html'];
  if (typeof html === 'string') {
    return { kind: 'html', html };
  }
  const svg = data['image/svg+xml'];
  if (typeof svg === 'string') {
    return {
      kind: 'image',
      src: `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`
    };
  }
  for (const mime of IMAGES) {
    const b64 = data[mime];
    if (typeof b64 === 'string' && /^[A-Za-z0-9+/=\s]*$/.test(b64)) {
      return { kind: 'image', src: `data:${mime};base64,${b64.trim()}` };
    }
  }
  for (const mime of TEXTS) {
    if (typeof data[mime] === 'string') {
      return { kind: 'text', text: data[mime] as string };
    }
  }
  const types = Object.keys(data).join(', ') || 'no data';
  return { kind: 'text', text: `[output of type ${types}]` };
}

function bundleOf(value: unknown): Record<string, unknown> {
  if (value && typeof value === 'object') {
    const data = (value as { data?: unknown }).data;
    if (data && typeof data === 'object' && !Array.isArray(data)) {
      return data as Record<string, unknown>;
    }
  }
  return {};
}

/** The look the frame's content takes from the page (colours, font). */
export interface IFrameStyle {
  color: string;
  font: string;
}

/** A fresh random nonce for the frame's content security policy. */
export function makeNonce(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, b => b.toString(16).padStart(2, '0')).join('');
}

/** The frame's whole document (pure given the nonce): policy, style, our script, the HTML. */
export function frameDocument(
  html: string,
  id: string,
  nonce: string,
  style: IFrameStyle
): string {
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    "style-src 'unsafe-inline'",
    'img-src data:',
    'font-src data:',
    "form-action 'none'",
    "base-uri 'none'"
  ].join('; ');
  // JSON in a script: `<` escaped so that no `</script>` in the HTML ends ours.
  const payload = JSON.stringify({ html, id }).replace(/</g, '\\u003c');
  const css = `body{margin:0;color:${cssValue(style.color)};font:${cssValue(style.font)};}
table{border-collapse:collapse;border-spacing:0;border:none;font-size:12px;}
th,td{padding:4px 8px;text-align:right;vertical-align:middle;border:none;}
thead{border-bottom:1px solid rgba(128,128,128,.6);}
tbody tr:nth-child(odd){background:rgba(128,128,128,.1);}
tbody tr:hover{background:rgba(66,165,245,.2);}
img,svg{max-width:100%;}`;
  const script = `(function(){
var p=${payload};
var t=document.createElement('template');
t.innerHTML=p.html;
t.content.querySelectorAll('script,meta,base,link,iframe,frame,frameset,object,embed,portal,form').forEach(function(e){e.remove();});
document.body.appendChild(t.content);
document.addEventListener('click',function(e){if(e.target&&e.target.closest&&e.target.closest('a,area')){e.preventDefault();}},true);
document.addEventListener('submit',function(e){e.preventDefault();},true);
var last=-1;
function post(){var h=Math.ceil(document.documentElement.getBoundingClientRect().height);if(h!==last){last=h;parent.postMessage({thinkFrame:p.id,height:h},'*');}}
new ResizeObserver(post).observe(document.documentElement);
post();
})();`;
  return (
    '<!DOCTYPE html><html><head><meta charset="utf-8">' +
    `<meta http-equiv="Content-Security-Policy" content="${csp}">` +
    `<style>${css}</style></head><body>` +
    `<script nonce="${nonce}">${script}</script></body></html>`
  );
}

function cssValue(value: string): string {
  // Computed styles of the page; kept to characters that cannot end the rule or the tag.
  return value.replace(/[^\w\s,.#()%'"-]/g, '');
}

/** A height report from a frame, clamped; null when the message is not one. */
export function reportedHeight(data: unknown, id: string): number | null {
  if (!data || typeof data !== 'object') {
    return null;
  }
  const { thinkFrame, height } = data as {
    thinkFrame?: unknown;
    height?: unknown;
  };
  if (thinkFrame !== id || typeof height !== 'number' || !isFinite(height)) {
    return null;
  }
  return Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, Math.ceil(height)));
}

let frames = 0;

/** Renders one wrapped bundle (see the module doc). */
export class UntrustedRenderer extends Widget implements IRenderMime.IRenderer {
  private _onMessage: ((e: MessageEvent) => void) | null = null;

  constructor() {
    super();
    this.addClass('jp-ThinkUntrusted');
  }

  /** Show the model's bundle. */
  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._stopListening();
    this.node.textContent = '';
    const view = chooseView(model.data[UNTRUSTED_MIME]);
    if (view.kind === 'text') {
      const pre = document.createElement('pre');
      pre.textContent = view.text;
      this.node.appendChild(pre);
    } else if (view.kind === 'image') {
      const img = document.createElement('img');
      img.src = view.src;
      img.alt = 'output image';
      this.node.appendChild(img);
    } else {
      this.node.appendChild(this._frame(view.html));
    }
    return Promise.resolve();
  }

  private _frame(html: string): HTMLIFrameElement {
    const id = `think-frame-${++frames}`;
    const frame = document.createElement('iframe');
    frame.setAttribute('sandbox', 'allow-scripts');
    frame.setAttribute('referrerpolicy', 'no-referrer');
    frame.setAttribute('title', 'output of sandboxed code');
    frame.className = 'jp-ThinkUntrusted-frame';
    frame.style.height = '120px';
    const page = getComputedStyle(document.body);
    frame.srcdoc = frameDocument(html, id, makeNonce(), {
      color: page.color,
      font: `${page.fontSize} ${page.fontFamily}`
    });
    this._onMessage = (e: MessageEvent) => {
      if (e.source !== frame.contentWindow) {
        return;
      }
      const height = reportedHeight(e.data, id);
      if (height !== null) {
        frame.style.height = `${height}px`;
      }
    };
    window.addEventListener('message', this._onMessage);
    return frame;
  }

  private _stopListening(): void {
    if (this._onMessage) {
      window.removeEventListener('message', this._onMessage);
      this._onMessage = null;
    }
  }

  /** Stop listening for the frame's reports. */
  dispose(): void {
    this._stopListening();
    super.dispose();
  }
}

/** The factory: safe whatever the output's trust, ranked above text/plain. */
export const untrustedFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [UNTRUSTED_MIME],
  defaultRank: 40,
  createRenderer: () => new UntrustedRenderer()
};

/** Registers the renderer with JupyterLab's rendermime registry. */
export const untrustedOutputPlugin: JupyterFrontEndPlugin<void> = {
  id: '@think/jupyter-think:untrusted-output',
  description: 'Shows rich output of sandboxed code in a sandboxed frame.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  activate: (_app: JupyterFrontEnd, rendermime: IRenderMimeRegistry) => {
    rendermime.addFactory(untrustedFactory, untrustedFactory.defaultRank);
  }
};
