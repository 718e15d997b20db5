/**
 * Attachments of the composer: pasted or dropped files and images, dragged
 * notebook cells. Pure helpers (unit tested); uploading is the panel's job.
 */

import type { IAttachment } from './tokens';

/** At most this many attachments per message (the server's limit too). */
export const MAX_ATTACHMENTS = 10;
/** Images up to this size (the server's limit too). */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
/** Other files: text up to about this size (the server checks the exact limit). */
export const MAX_FILE_BYTES = 1024 * 1024;
/** The MIME type JupyterLab puts on dragged notebook cells. */
export const CELLS_MIME = 'application/vnd.jupyter.cells';

const IMAGE_TYPES = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp'
]);

/** An attachment in the composer, before it is sent. */
export interface IPendingAttachment {
  id: string;
  kind: 'image' | 'file' | 'cells' | 'variables';
  name: string;
  size: number;
  /** The bytes to upload (files and images). */
  file?: Blob;
  /** Notebook cells or a variable's summary (sent inline, nothing to upload). */
  cells?: IAttachment;
  /** Why it cannot be sent (shown on its chip). */
  error?: string;
  /** What it attaches, shown when hovering its chip (a variable's summary). */
  summary?: string;
}

let counter = 0;

/** A pending attachment for a pasted or dropped file, with a reason when it is refused. */
export function pendingFromFile(
  file: Blob & { name?: string }
): IPendingAttachment {
  const image = IMAGE_TYPES.has(file.type);
  const name = file.name || (image ? 'pasted-image.png' : 'pasted-file.txt');
  const att: IPendingAttachment = {
    id: `att-${Date.now()}-${++counter}`,
    kind: image ? 'image' : 'file',
    name,
    size: file.size,
    file
  };
  if (image && file.size > MAX_IMAGE_BYTES) {
    att.error = `over ${MAX_IMAGE_BYTES / 1024 / 1024} MB`;
  } else if (!image && file.type.startsWith('image/')) {
    att.error = 'only PNG, JPEG, GIF and WebP images';
  } else if (!image && file.size > MAX_FILE_BYTES) {
    att.error = 'too large: put it in the workspace instead';
  }
  return att;
}

function sourceText(source: unknown): string {
  if (Array.isArray(source)) {
    return source.map(String).join('');
  }
  return typeof source === 'string' ? source : '';
}

/** Cells dragged from a notebook (their nbformat JSON) as an attachment. */
export function pendingFromCells(
  cells: unknown,
  path: string | null
): IPendingAttachment | null {
  if (!Array.isArray(cells) || !cells.length) {
    return null;
  }
  const shaped = cells
    .filter((c): c is Record<string, unknown> => !!c && typeof c === 'object')
    .slice(0, 50)
    .map(c => ({
      id: typeof c.id === 'string' ? c.id : '',
      cell_type: ['code', 'markdown', 'raw'].includes(String(c.cell_type))
        ? String(c.cell_type)
        : 'code',
      source: sourceText(c.source)
    }));
  if (!shaped.length) {
    return null;
  }
  const label = path ? (path.split('/').pop() ?? path) : 'notebook';
  const n = shaped.length;
  return {
    id: `att-${Date.now()}-${++counter}`,
    kind: 'cells',
    name: `${n} cell${n === 1 ? '' : 's'} of ${label}`,
    size: shaped.reduce((t, c) => t + c.source.length, 0),
    cells: { kind: 'cells', path: path ?? '', cells: shaped }
  };
}

/** Add attachments, keeping at most MAX_ATTACHMENTS. */
export function addPending(
  current: readonly IPendingAttachment[],
  more: readonly IPendingAttachment[]
): IPendingAttachment[] {
  return [...current, ...more].slice(0, MAX_ATTACHMENTS);
}

/** `2.3 MB`, `12 KB`, `512 B`. */
export function formatBytes(n: number): string {
  if (n < 1024) {
    return `${n} B`;
  }
  if (n < 1024 * 1024) {
    return `${Math.round(n / 1024)} KB`;
  }
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** A short label of a sent attachment (message chips). */
export function attachmentLabel(a: IAttachment): string {
  if (a.kind === 'cells') {
    const n = a.cells?.length ?? 0;
    const nb = a.path ? (a.path.split('/').pop() ?? a.path) : 'notebook';
    return `${n} cell${n === 1 ? '' : 's'} of ${nb}`;
  }
  if (a.kind === 'variables') {
    return `@${a.name ?? 'variable'}`;
  }
  return a.name ?? a.kind;
}
