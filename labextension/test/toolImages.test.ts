// @vitest-environment jsdom
import React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';

import type { IToolCallState } from '../src/reducer';
import { ToolCard } from '../src/toolCard';
import {
  MAX_IMAGE_CHARS,
  storedToolImages,
  toolImages
} from '../src/toolImages';

// A 1x1 PNG.
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

const screenshot = {
  'image/png': PNG,
  'text/plain': '<screenshot of https://example.org/>',
  think: {
    kind: 'screenshot',
    url: 'https://example.org/',
    blob: 'b'.repeat(64),
    thumbnail: 't'.repeat(64)
  }
};

describe('toolImages', () => {
  it('turns image bundles into data URLs with a caption', () => {
    expect(toolImages([screenshot, { 'text/plain': 'x' }])).toEqual([
      {
        src: `data:image/png;base64,${PNG}`,
        alt: 'Screenshot of https://example.org/',
        url: 'https://example.org/'
      }
    ]);
    expect(
      toolImages([{ 'image/jpeg': PNG, 'text/plain': 'a chart' }])
    ).toEqual([
      { src: `data:image/jpeg;base64,${PNG}`, alt: 'a chart', url: undefined }
    ]);
  });

  it('skips what is not base64 image data', () => {
    expect(toolImages(undefined)).toEqual([]);
    expect(
      toolImages([
        { 'image/png': '"><script>alert(1)</script>' },
        { 'image/png': 42 },
        { 'image/svg+xml': '<svg/>' },
        { 'image/png': 'A'.repeat(MAX_IMAGE_CHARS + 4) }
      ] as unknown as Record<string, unknown>[])
    ).toEqual([]);
  });
});

describe('ToolCard', () => {
  const call: IToolCallState = {
    id: 'c1',
    name: 'screenshot',
    input: { url: 'https://example.org/' },
    status: 'complete',
    messageId: 'm1',
    output: 'Screenshot of the page at https://example.org/',
    summary: 'screenshot: https://example.org/ thumbnail=' + 't'.repeat(64),
    durationMs: 180,
    progress: '',
    display: [screenshot]
  };

  it('shows the screenshot, collapsed or not', () => {
    const html = renderToStaticMarkup(React.createElement(ToolCard, { call }));
    expect(html).toContain(`src="data:image/png;base64,${PNG}"`);
    expect(html).toContain('alt="Screenshot of https://example.org/"');
    expect(html).toContain('<figcaption');
  });

  it('after a reload, shows the stored screenshot from the attachment route', () => {
    const reloaded: IToolCallState = {
      ...call,
      display: [],
      storedImages: [
        {
          sessionId: 's 1',
          messageId: 'm1',
          index: 0,
          name: 'https://example.org/'
        }
      ]
    };
    const html = renderToStaticMarkup(
      React.createElement(ToolCard, { call: reloaded })
    );
    // (jsdom gives the page an origin: the route may come absolute)
    expect(html).toMatch(
      /src="[^"]*\/api\/think\/sessions\/s%201\/messages\/m1\/attachments\/0"/
    );
    expect(html).toContain('alt="Screenshot of https://example.org/"');
    expect(storedToolImages(reloaded.storedImages, '/user/ada/')[0].src).toBe(
      '/user/ada/api/think/sessions/s%201/messages/m1/attachments/0'
    );
  });

  it('shows no image strip for other tools', () => {
    const plain = { ...call, name: 'bash', display: [] };
    const html = renderToStaticMarkup(
      React.createElement(ToolCard, { call: plain })
    );
    expect(html).not.toContain('<img');
  });
});
