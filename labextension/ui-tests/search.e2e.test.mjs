/**
 * Browser test of the sidebar's search over all sessions, against a real JupyterLab, real
 * think kernels and the real store; only the model is scripted (see harness.mjs): a decision
 * said in one chat is found from another, and the hit opens the first chat at its message;
 * `remember` asks first; its card shows the line it added to the memory file, and undoes it.
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium).
 */

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { after, afterEach, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { launchLab, shot } from './harness.mjs';

const TIMEOUT = 60000;
const extDir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

let ui;
let lab;
let page;

async function newSession(p) {
  const known = (await lab.api('GET', 'sessions')).sessions.map(s => s.id);
  await p.getByRole('button', { name: 'New session' }).click();
  const handle = await p.waitForFunction(known => {
    const el = document.querySelector('.jp-ThinkSessions-select');
    return el && el.value && !known.includes(el.value) ? el.value : null;
  }, known);
  await p.waitForSelector('.jp-ThinkStatus[data-status="idle"]');
  return handle.jsonValue();
}

async function ask(p, replies, text) {
  await lab.scriptReplies(replies);
  await p.fill('.jp-ThinkComposer-input', text);
  await p.keyboard.press('Enter');
  await p.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
    timeout: TIMEOUT
  });
}

/** A session with `n` stored messages (ids `<session id>-seed-<i>`), through the store. */
async function seeded(title, n) {
  const session = await lab.api('POST', 'sessions', { title });
  const store = fs
    .readFileSync(lab.log, 'utf8')
    .match(/Think store: (\S+think\.db)/)[1];
  const r = spawnSync(
    'python3',
    [
      path.join(extDir, 'ui-tests', 'seed_store.py'),
      store,
      session.id,
      String(n)
    ],
    {
      env: { ...process.env, PYTHONPATH: path.dirname(extDir) },
      encoding: 'utf8'
    }
  );
  assert.equal(r.status, 0, `seeding failed: ${r.stderr}`);
  return session;
}

async function search(p, text) {
  const box = p.getByRole('searchbox', { name: 'Search all sessions' });
  await box.fill(text);
  await box.press('Enter');
}

describe('Search over all sessions in the sidebar', () => {
  before(async () => {
    // A user folder of its own: the memory file (and store) of no one else.
    const data = fs.mkdtempSync(path.join(os.tmpdir(), 'think-e2e-data-'));
    ui = await launchLab({ sidebar: true, env: { JUPYTER_DATA_DIR: data } });
    ({ lab, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('a decision of one chat is found from another and opens it at the hit', async () => {
    const first = await newSession(page);
    await ask(
      page,
      [{ text: 'Noted: Parquet it is.' }],
      'We decided: results are stored as Parquet files, never CSV.'
    );
    const second = await newSession(page);
    assert.notEqual(first, second);
    await ask(page, [{ text: 'Hello.' }], 'Something else entirely.');

    await search(page, 'decided parquet');
    const hit = page.locator(`.jp-ThinkSearch-hit[data-session-id="${first}"]`);
    await hit.first().waitFor({ timeout: TIMEOUT });
    assert.deepEqual(await hit.first().locator('mark').allTextContents(), [
      'decided',
      'Parquet'
    ]);
    await shot(page, 'search-hits', page.locator('.jp-ThinkChat'));
    const messageId = await hit.first().getAttribute('data-hit');
    await hit.first().click();
    await page.waitForFunction(
      id => document.querySelector('.jp-ThinkSessions-select')?.value === id,
      first,
      { timeout: TIMEOUT }
    );
    await page
      .locator(`.jp-ThinkSearch-found[data-message-id="${messageId}"]`)
      .waitFor({ timeout: TIMEOUT });
  });

  test('a query with no words says why; one that is not syntax is read as words', async () => {
    await search(page, '()');
    const alert = page.locator('.jp-ThinkSearch-error[role="alert"]');
    await alert.waitFor({ timeout: TIMEOUT });
    assert.match(await alert.textContent(), /400: .*has no words/);
    await search(page, 'parquet-files');
    await page.locator('.jp-ThinkSearch-notice').waitFor({ timeout: TIMEOUT });
    assert.match(
      await page.locator('.jp-ThinkSearch-notice').textContent(),
      /searched for the words "parquet" "files"/
    );
    await page
      .locator('.jp-ThinkSearch-hit')
      .first()
      .waitFor({ timeout: TIMEOUT });
  });

  test('remember asks first; its card shows the line and Undo takes it out', async () => {
    await newSession(page);
    await lab.scriptReplies([
      { tool_calls: [['remember', { text: 'The team uses uv, not pip' }]] },
      { text: 'I will remember that.' }
    ]);
    await page.fill('.jp-ThinkComposer-input', 'Remember that we use uv.');
    await page.locator('.jp-ThinkComposer-input').press('Enter');
    // Every later prompt carries the memory file: the line waits for a person's yes.
    const card = page.locator('.jp-ThinkApproval[data-status="pending"]');
    await card.waitFor({ timeout: TIMEOUT });
    assert.match(await card.textContent(), /memory file/);
    assert.equal((await lab.api('GET', 'memory')).text, '');
    await card.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
      timeout: TIMEOUT
    });
    const note = page.locator('.jp-ThinkMemoryUndo');
    await note.waitFor({ timeout: TIMEOUT });
    assert.match(
      await note.textContent(),
      /Added to your memory file: - \d{4}-\d\d-\d\d: The team uses uv, not pip/
    );
    let memory = await lab.api('GET', 'memory');
    assert.match(memory.text, /The team uses uv, not pip/);
    await shot(page, 'remember-undo', page.locator('.jp-ThinkChat'));
    await note.getByRole('button', { name: /^Undo/ }).click();
    await page
      .locator('.jp-ThinkMemoryUndo', {
        hasText: 'Taken out of your memory file'
      })
      .waitFor({ timeout: TIMEOUT });
    memory = await lab.api('GET', 'memory');
    assert.equal(memory.text, '');
    assert.equal(memory.notes[0].present, false);
  });

  test('a hit far back in a long session reads older pages until it shows', async () => {
    const long = await seeded('long history', 400);
    await newSession(page); // another session is open when the search starts
    await search(page, '"code_1"');
    const hit = page.locator(
      `.jp-ThinkSearch-hit[data-hit="${long.id}-seed-1"]`
    );
    await hit.waitFor({ timeout: TIMEOUT });
    await hit.click();
    await page
      .locator(`.jp-ThinkSearch-found[data-message-id="${long.id}-seed-1"]`)
      .waitFor({ timeout: TIMEOUT });
  });
});
