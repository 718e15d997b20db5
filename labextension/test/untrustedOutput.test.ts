// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';

import {
  chooseView,
  frameDocument,
  MAX_HEIGHT,
  MIN_HEIGHT,
  reportedHeight,
  UNTRUSTED_MIME,
  UntrustedRenderer,
  untrustedFactory
} from '../src/untrustedOutput';

const STYLE = {
  color: 'rgb(0, 0, 0)',
  font: '13px "Helvetica Neue", sans-serif'
};
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

function render(data: Record<string, unknown>): UntrustedRenderer {
  const r = untrustedFactory.createRenderer({
    mimeType: UNTRUSTED_MIME
  } as never) as UntrustedRenderer;
  void r.renderModel({
    data: { [UNTRUSTED_MIME]: { data } },
    metadata: {},
    trusted: true,
    setData: () => undefined
  } as never);
  return r;
}

describe('chooseView', () => {
  it('prefers HTML, then SVG as an image, then raster images, then text', () => {
    expect(
      chooseView({ data: { 'text/html': '<b>x</b>', 'text/plain': 'x' } })
    ).toEqual({
      kind: 'html',
      html: '<b>x</b>'
    });
    const svg = chooseView({
      data: { 'image/svg+xml': '<svg onload="x()"/>' }
    });
    expect(svg.kind).toBe('image');
    expect(
      svg.kind === 'image' && svg.src.startsWith('data:image/svg+xml;')
    ).toBe(true);
    expect(chooseView({ data: { 'image/png': PNG } })).toEqual({
      kind: 'image',
      src: `data:image/png;base64,${PNG}`
    });
    expect(
      chooseView({ data: { 'application/javascript': 'top.x=1' } })
    ).toEqual({
      kind: 'text',
      text: 'top.x=1'
    });
  });

  it('never fails on odd values', () => {
    expect(chooseView(null).kind).toBe('text');
    expect(chooseView({ data: [] }).kind).toBe('text');
    expect(chooseView({ data: { 'image/png': '"><img onerror=x>' } })).toEqual({
      kind: 'text',
      text: '[output of type image/png]'
    });
  });
});

describe('frameDocument', () => {
  const doc = frameDocument(
    '</script><script>top.x=1</script>',
    'f1',
    'abc123',
    STYLE
  );

  it('runs only the script carrying the nonce and fetches nothing remote', () => {
    expect(doc).toContain(
      `content="default-src 'none'; script-src 'nonce-abc123'; style-src 'unsafe-inline'; img-src data:; font-src data:; form-action 'none'; base-uri 'none'"`
    );
    expect(doc.match(/<script/g)).toHaveLength(1);
    expect(doc).toContain('<script nonce="abc123">');
    expect(doc).not.toContain('allow-same-origin');
  });

  it('keeps the HTML out of the markup (it is parsed from a template by our script)', () => {
    expect(doc).not.toContain('</script><script>top');
    expect(doc).toContain('\\u003c/script>\\u003cscript>top.x=1');
  });

  it('drops what could navigate or nest a page', () => {
    for (const tag of [
      'meta',
      'base',
      'iframe',
      'object',
      'embed',
      'form',
      'script'
    ]) {
      expect(doc).toContain(tag);
    }
    expect(doc).toContain("closest('a,area')");
  });

  it('keeps page style values from ending the rule', () => {
    const bad = frameDocument('', 'f', 'n', {
      color: 'red;}</style><script>',
      font: 'x'
    });
    expect(bad).not.toContain('</style><script>');
  });
});

describe('reportedHeight', () => {
  it('clamps the frame height and ignores other messages', () => {
    expect(reportedHeight({ thinkFrame: 'a', height: 300.2 }, 'a')).toBe(301);
    expect(reportedHeight({ thinkFrame: 'a', height: 1e9 }, 'a')).toBe(
      MAX_HEIGHT
    );
    expect(reportedHeight({ thinkFrame: 'a', height: -5 }, 'a')).toBe(
      MIN_HEIGHT
    );
    expect(reportedHeight({ thinkFrame: 'b', height: 10 }, 'a')).toBeNull();
    expect(reportedHeight({ thinkFrame: 'a', height: NaN }, 'a')).toBeNull();
    expect(reportedHeight('x', 'a')).toBeNull();
  });
});

describe('UntrustedRenderer', () => {
  it('puts HTML in a frame with scripts but no same origin', () => {
    const r = render({
      'text/html': '<table><tr><td>1</td></tr></table>',
      'text/plain': '1'
    });
    const frame = r.node.querySelector('iframe');
    expect(frame).not.toBeNull();
    expect(frame!.getAttribute('sandbox')).toBe('allow-scripts');
    expect(frame!.srcdoc).toContain('\\u003ctd>1\\u003c/td>');
    expect(r.node.querySelector('table')).toBeNull(); // never in the page itself
    r.dispose();
  });

  it('shows text as text and images as images', () => {
    const t = render({
      'application/javascript': 'top.__pwned=1',
      'text/plain': 'js'
    });
    expect(t.node.querySelector('pre')!.textContent).toBe('js');
    expect(t.node.querySelector('script')).toBeNull();
    const i = render({
      'image/svg+xml': '<svg xmlns="http://www.w3.org/2000/svg"/>'
    });
    expect(
      i.node.querySelector('img')!.src.startsWith('data:image/svg+xml')
    ).toBe(true);
    expect(i.node.querySelector('svg')).toBeNull();
  });

  it('is safe for untrusted notebooks and outranks text/plain', () => {
    expect(untrustedFactory.safe).toBe(true);
    expect(untrustedFactory.defaultRank).toBeLessThan(120);
  });
});
