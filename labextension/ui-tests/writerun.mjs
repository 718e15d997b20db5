/**
 * Write-then-run rounds against a real JupyterLab with the file open in an editor tab
 * (used by writerun.e2e.test.mjs and bench/writerun.mjs).
 *
 * Each chat message scripts up to ROUNDS_PER_MESSAGE rounds of the fake model: `read_file`,
 * a write (`write_file`, or `edit_file` of the agent's own line while a person types on
 * another), then `bash cat` of the file; the sandboxed run must print what was written.
 */

import fs from 'node:fs';
import path from 'node:path';

/** Rounds per message: three model steps each, plus the answer, within max_steps (20). */
export const ROUNDS_PER_MESSAGE = 6;

const sleep = ms => new Promise(r => setTimeout(r, ms));

/** A new chat session, created through the REST API. */
export async function newSession(lab) {
  return (await lab.api('POST', 'sessions', { title: 'write then run' })).id;
}

/** Stored events of a session after `after`, with their data parsed. */
async function events(lab, sid, after) {
  const { events: rows } = await lab.api(
    'GET',
    `sessions/${sid}/events?after=${after}&limit=10000`
  );
  return rows.map(r => ({
    ...(typeof r.data === 'string' ? JSON.parse(r.data) : r.data),
    type: r.type,
    seq: r.seq
  }));
}

/**
 * Send one message whose scripted turn is `replies`; while it runs, call `during()` (if
 * given) until the turn ends. Resolves with the turn's events.
 */
export async function turn(lab, sid, replies, during, timeout = 120000) {
  const start = (await events(lab, sid, 0)).at(-1)?.seq ?? 0;
  await lab.scriptReplies([...replies, { text: 'done' }]);
  await lab.api('POST', `sessions/${sid}/messages`, {
    content: 'write, then run'
  });
  const deadline = Date.now() + timeout;
  for (;;) {
    const seen = await events(lab, sid, start);
    const end = seen.find(
      e => e.type === 'task_complete' || e.type === 'task_failed'
    );
    if (end) {
      if (end.type === 'task_failed') {
        throw new Error(
          `the turn failed: ${JSON.stringify(end).slice(0, 500)}`
        );
      }
      return seen;
    }
    if (Date.now() > deadline) {
      throw new Error(`the turn did not end in ${timeout} ms`);
    }
    if (during) {
      await during();
    } else {
      await sleep(20);
    }
  }
}

/** The outputs of one tool's results in `seen`, in order. */
export function outputs(seen, name) {
  return seen
    .filter(e => e.type === 'tool_result' && e.name === name)
    .map(e => String(e.output));
}

/**
 * `rounds` rounds of read_file -> write_file -> bash cat of `name`; returns
 * `{ stale, reported, total }`: the rounds whose run did not print the written text, and
 * those whose run reported a file as changed (it changed none).
 */
export async function writeRounds(lab, sid, name, rounds) {
  const stale = [];
  const reported = [];
  for (let first = 0; first < rounds; first += ROUNDS_PER_MESSAGE) {
    const lines = [];
    const replies = [];
    for (let i = first; i < Math.min(rounds, first + ROUNDS_PER_MESSAGE); i++) {
      const line = `round ${i} ${Math.random().toString(16).slice(2, 8)}`;
      lines.push(line);
      replies.push(
        { tool_calls: [['read_file', { path: name }]] },
        { tool_calls: [['write_file', { path: name, content: `${line}\n` }]] },
        { tool_calls: [['bash', { command: `cat ${name}` }]] }
      );
    }
    const cats = outputs(await turn(lab, sid, replies), 'bash');
    lines.forEach((line, k) => {
      const out = cats[k] ?? '(no result)';
      if (!out.startsWith(`${line}\n`)) {
        stale.push({ round: first + k, out });
      }
      if (out.includes('[files:')) {
        reported.push({ round: first + k, out });
      }
    });
  }
  return { stale, reported, total: rounds };
}

/**
 * Rounds while a person types at the end of the first line of `name` (keyboard typing in
 * the open editor): read_file -> edit_file of the agent's own line `agent <n>` -> bash cat.
 * Returns `{ stale, reported, typed }` (`typed`: what the person typed).
 */
export async function typingRounds(lab, page, editor, sid, name, rounds) {
  const stale = [];
  const reported = [];
  let typed = '';
  await editor.locator('.cm-line').first().click();
  await page.keyboard.press('End');
  const typeOne = async () => {
    const ch = String.fromCharCode(97 + (typed.length % 26));
    await page.keyboard.type(ch, { delay: 15 });
    typed += ch;
  };
  for (let first = 0; first < rounds; first += ROUNDS_PER_MESSAGE) {
    const replies = [];
    const last = Math.min(rounds, first + ROUNDS_PER_MESSAGE);
    for (let i = first; i < last; i++) {
      replies.push(
        { tool_calls: [['read_file', { path: name }]] },
        {
          tool_calls: [
            [
              'edit_file',
              {
                path: name,
                old_string: `agent ${i}\n`,
                new_string: `agent ${i + 1}\n`
              }
            ]
          ]
        },
        { tool_calls: [['bash', { command: `cat ${name}` }]] }
      );
    }
    const seen = await turn(lab, sid, replies, typeOne);
    const edits = outputs(seen, 'edit_file');
    const cats = outputs(seen, 'bash');
    for (let i = first; i < last; i++) {
      const out = cats[i - first] ?? '(no result)';
      if (!out.includes(`\nagent ${i + 1}\n`)) {
        stale.push({ round: i, out, edit: edits[i - first] });
      }
      if (out.includes('[files:')) {
        reported.push({ round: i, out });
      }
    }
  }
  return { stale, reported, typed };
}

/** Wait until the file on disk is `want` (the room saves it a moment after a change). */
export async function waitDisk(lab, name, want, timeout = 20000) {
  const file = path.join(lab.root, name);
  const deadline = Date.now() + timeout;
  for (;;) {
    const text = fs.readFileSync(file, 'utf8');
    if (text === want) {
      return;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${name} on disk is ${JSON.stringify(text)}, not ${JSON.stringify(want)}`
      );
    }
    await sleep(50);
  }
}

/** The text of the first editor of `page` (its lines, joined). */
export function editorText(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('.jp-FileEditor .cm-line')]
      .map(l => l.textContent)
      .join('\n')
  );
}

/** Wait until the editor of `page` shows `want`. */
export async function waitEditor(page, want, timeout = 20000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const text = await editorText(page);
    if (text === want) {
      return;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `the editor shows ${JSON.stringify(text)}, not ${JSON.stringify(want)}`
      );
    }
    await sleep(50);
  }
}
