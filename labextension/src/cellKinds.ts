/**
 * Pure rules of Think's notebook cells: which cells are requests, and the MIME type their
 * editors use (no JupyterLab imports, unit tested).
 */

/** The MIME type of JupyterLab's Markdown cells (GitHub Markdown with math). */
export const MARKDOWN_MIME = 'text/x-ipythongfm';
/** The class of a cell that shows the empty Think cell's hint. */
export const EMPTY_CLASS = 'jp-mod-thinkEmpty';

/** True if a code cell's source is a `%%think` request. */
export function isThinkMagic(source: string): boolean {
  return /^\s*%%think\b/.test(source);
}

/**
 * The MIME type a code cell's editor should use: Markdown for a `%%think` request, else
 * the notebook's (`notebookMime`, from its kernel's language).
 */
export function cellMimeType(source: string, notebookMime: string): string {
  return isThinkMagic(source) ? MARKDOWN_MIME : notebookMime;
}
