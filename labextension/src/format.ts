/**
 * Pure formatting helpers of the chat views (no JupyterLab imports, unit tested).
 */

const PATH_RE =
  /^(?:\.{0,2}\/)?[\w@.+-]+(?:\/[\w@.+-]+)*\.[A-Za-z0-9]{1,10}(?::\d+)?$/;

const KNOWN_EXT = new Set(
  (
    'py ipynb md txt rst json yaml yml toml cfg ini csv tsv parquet js mjs ts tsx jsx ' +
    'html css scss sh bash r jl sql xml svg png jpg jpeg gif pdf c h cc cpp hpp rs go ' +
    'java kt rb php lock log env dockerfile makefile tex bib'
  ).split(' ')
);

/**
 * True if inline code text looks like a workspace file path (`src/app.py`, `a.ipynb`).
 *
 * A bare name needs a known extension, so `os.path` or `v1.2.3` are not links.
 */
export function looksLikePath(text: string): boolean {
  const t = text.trim();
  if (
    t.length < 3 ||
    t.length > 255 ||
    /^[a-z]+:\/\//i.test(t) ||
    !PATH_RE.test(t)
  ) {
    return false;
  }
  const name = t.replace(/:\d+$/, '');
  const ext = name.slice(name.lastIndexOf('.') + 1).toLowerCase();
  return KNOWN_EXT.has(ext) || (name.includes('/') && /[a-z]/i.test(ext));
}

/** A one-line summary of a tool's arguments (e.g. the command or the path). */
export function summariseInput(input: unknown): string {
  if (input === undefined || input === null) {
    return '';
  }
  if (typeof input === 'string') {
    return input;
  }
  if (typeof input === 'object') {
    const o = input as Record<string, unknown>;
    for (const k of ARG_KEYS) {
      if (typeof o[k] === 'string' && o[k]) {
        return o[k] as string;
      }
    }
    if (!Array.isArray(input)) {
      // Our own tools (tasks, subagents) take small records: "key: value" reads better
      // than their JSON.
      return Object.entries(o)
        .filter(([, v]) => v !== null && v !== undefined && v !== '')
        .map(
          ([k, v]) =>
            `${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`
        )
        .join(', ');
    }
  }
  return JSON.stringify(input);
}

/** The argument that names what a call is about, first found first. */
const ARG_KEYS = [
  'command',
  'path',
  'url',
  'query',
  'code',
  'cell_id',
  'title',
  'task_id',
  'task',
  'instructions'
];

/** Format milliseconds for a card header. */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || ms === null || Number.isNaN(ms)) {
    return '';
  }
  if (ms < 1000) {
    return `${Math.round(ms)} ms`;
  }
  return `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
}
