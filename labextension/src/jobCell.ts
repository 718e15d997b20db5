/**
 * The `%%think_job` cell of a `%%bash` or `%%python` cell: what "Run in background" makes
 * of it (runInBackground.ts).
 *
 * A `%%python` body goes to `python3` on standard input (unbuffered, so its progress lines
 * show as they come): a job is a process of its own, not the notebook's Python namespace.
 */

const JOB_MAGIC = '%%think_job';
const PY_END = 'THINK_PY_END';

/**
 * The `%%think_job` cell that runs `source` in the background, or null for a cell that is
 * no code (a request to the agent, a command line).
 */
export function backgroundSource(source: string): string | null {
  const text = source.replace(/^\s*\n/, '');
  const nl = text.indexOf('\n');
  const first = (nl < 0 ? text : text.slice(0, nl)).trim();
  const body = nl < 0 ? '' : text.slice(nl + 1);
  const magic = first.split(/\s+/)[0];
  if (magic === JOB_MAGIC) {
    return text;
  }
  if (!body.trim()) {
    return null;
  }
  if (magic === '%%bash') {
    return `${JOB_MAGIC}\n${body}`;
  }
  if (magic === '%%python') {
    // A body line equal to the delimiter would end the here-document early.
    let end = PY_END;
    const lines = new Set(body.split('\n').map(l => l.trim()));
    while (lines.has(end)) {
      end += '_';
    }
    const code = body.endsWith('\n') ? body : body + '\n';
    return `${JOB_MAGIC}\npython3 -u - <<'${end}'\n${code}${end}`;
  }
  return null;
}
