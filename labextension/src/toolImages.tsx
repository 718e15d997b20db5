/**
 * Images a tool returned (a browser screenshot), shown in its tool card.
 *
 * Tool results carry MIME bundles in `display`; `image/png` and `image/jpeg` ones are shown
 * inline. A screenshot's bundle also carries `think: {kind, url, blob, thumbnail}`, the page
 * it shows and where the store keeps it.
 */

import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import React, { useState } from 'react';

import type { IStoredImage } from './chatState';

const IMAGE_TYPES = ['image/png', 'image/jpeg'] as const;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** Larger images are not inlined (the cell output still has them). */
export const MAX_IMAGE_CHARS = 8_000_000;

/** One image to show. */
export interface IToolImage {
  src: string;
  alt: string;
  url?: string;
}

/** The images of a tool result's display bundles, in order (bad data is skipped). */
export function toolImages(display?: Record<string, unknown>[]): IToolImage[] {
  const out: IToolImage[] = [];
  for (const bundle of display ?? []) {
    if (!bundle || typeof bundle !== 'object') {
      continue;
    }
    const mime = IMAGE_TYPES.find(m => typeof bundle[m] === 'string');
    if (!mime) {
      continue;
    }
    const data = (bundle[mime] as string).replace(/\s+/g, '');
    if (!data || data.length > MAX_IMAGE_CHARS || !BASE64.test(data)) {
      continue;
    }
    const meta = (bundle['think'] ?? {}) as Record<string, unknown>;
    const url = typeof meta.url === 'string' ? meta.url : undefined;
    const plain = bundle['text/plain'];
    const alt = url
      ? `Screenshot of ${url}`
      : typeof plain === 'string' && plain
        ? plain
        : 'Tool image';
    out.push({ src: `data:${mime};base64,${data}`, alt, url });
  }
  return out;
}

/**
 * Images of a stored tool message (after a reload the stream's bundles are gone): served by
 * the attachment route, which the browser's session cookie authenticates like `/files/`.
 */
export function storedToolImages(
  stored: IStoredImage[] | undefined,
  baseUrl: string = PageConfig.getBaseUrl()
): IToolImage[] {
  return (stored ?? []).map(img => ({
    src: URLExt.join(
      baseUrl,
      'api/think/sessions',
      encodeURIComponent(img.sessionId),
      'messages',
      encodeURIComponent(img.messageId),
      'attachments',
      String(img.index)
    ),
    alt: img.name ? `Screenshot of ${img.name}` : 'Tool image',
    url: img.name || undefined
  }));
}

/** Props of the image strip. */
export interface IToolImagesProps {
  images: IToolImage[];
}

/** The images, small until clicked. */
export function ToolImages({ images }: IToolImagesProps): JSX.Element | null {
  const [open, setOpen] = useState<number | null>(null);
  if (!images.length) {
    return null;
  }
  return (
    <div className="jp-ThinkToolCard-images">
      {images.map((img, i) => (
        <figure key={i} className="jp-ThinkToolCard-figure">
          <button
            className="jp-ThinkToolCard-imageButton"
            onClick={() => setOpen(open === i ? null : i)}
            aria-expanded={open === i}
            aria-label={open === i ? 'Shrink image' : 'Enlarge image'}
          >
            <img
              className={`jp-ThinkToolCard-image${open === i ? ' jp-mod-expanded' : ''}`}
              src={img.src}
              alt={img.alt}
            />
          </button>
          {img.url ? (
            <figcaption className="jp-ThinkToolCard-caption" title={img.url}>
              {img.url}
            </figcaption>
          ) : null}
        </figure>
      ))}
    </div>
  );
}
