/**
 * Undo on an action-log row, against a real JupyterLab, server, kernels and rooms (only the
 * model is scripted): the agent edits one file three times; Undo on the middle edit's row
 * reverts that edit alone, the earlier and later ones stay; only rows that changed a file
 * have Undo, and an undone row says so.
 */

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, test } from 'node:test';

import { launchLab, shot } from './harness.mjs';

const TIMEOUT = 60000;
const LINES = Array.from({ length: 9 }, (_, i) => `l${i + 1}\n`).join('');

let ui;

async function newSession(p, lab) {
  const known = (await lab.api('GET', 'sessions')).sessions.map(s => s.id);
  await p.getByRole('button', { name: 'New session' }).click();
  await p.waitForFunction(known => {
    const el = document.querySelector('.jp-ThinkSessions-select');
    return el && el.value && !known.includes(el.value);
  }, known);
  await p.waitForSelector('.jp-ThinkStatus[data-status="idle"]');
}

async function waitDisk(file, want) {
  const deadline = Date.now() + TIMEOUT;
  for (;;) {
    const got = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
    if (got === want) {
      return;
    }
    if (Date.now() > deadline) {
      assert.equal(got, want, `${path.basename(file)} on disk`);
    }
    await new Promise(r => setTimeout(r, 50)); // polling the disk: no event to wait on
  }
}

const edit = (from, to) => ({
  tool_calls: [
    [
      'edit_file',
      { path: 'notes.txt', old_string: `${from}\n`, new_string: `${to}\n` }
    ]
  ]
});

describe('Undo in the action log', () => {
  afterEach(async t => {
    await ui?.lab.reportFailure(t);
    await ui?.close();
    ui = undefined;
  });

  test('Undo on the middle edit reverts it alone', async () => {
    ui = await launchLab({ files: { 'notes.txt': LINES }, sidebar: true });
    const { lab, page } = ui;
    await newSession(page, lab);
    await lab.scriptReplies([
      { tool_calls: [['read_file', { path: 'notes.txt' }]] },
      edit('l1', 'L1 agent'),
      edit('l5', 'L5 agent'),
      edit('l9', 'L9 agent'),
      { text: 'edits done' }
    ]);
    await page.fill('.jp-ThinkComposer-input', 'edit the notes');
    await page.keyboard.press('Enter');
    await page
      .locator('.jp-ThinkMessage.jp-mod-assistant', { hasText: 'edits done' })
      .waitFor({ timeout: TIMEOUT });
    const file = path.join(lab.root, 'notes.txt');
    const edited = LINES.replace('l1\n', 'L1 agent\n')
      .replace('l5\n', 'L5 agent\n')
      .replace('l9\n', 'L9 agent\n');
    await waitDisk(file, edited);

    await page.getByRole('button', { name: 'Open the action log' }).click();
    const undoButtons = page.getByRole('button', {
      name: 'Undo edit_file of notes.txt'
    });
    await undoButtons.nth(2).waitFor({ timeout: TIMEOUT });
    // Four rows (the read and three edits); only the edits have Undo.
    const rows = page.locator('.jp-ThinkActionLog-table tbody tr');
    assert.equal(await rows.count(), 4);
    assert.equal(await page.locator('.jp-ThinkActionLog-undo').count(), 3);

    await undoButtons.nth(1).click();
    const status = page.locator('.jp-ThinkActionLog-undone');
    await status.waitFor({ timeout: TIMEOUT });
    assert.equal(
      await status.textContent(),
      'Undid edit_file: restored notes.txt.'
    );
    await waitDisk(file, edited.replace('L5 agent\n', 'l5\n'));
    // The log refreshes: the undo is a row of its own and the middle edit says "undone".
    await page
      .locator('.jp-ThinkActionLog-undoneMark')
      .waitFor({ timeout: TIMEOUT });
    await page
      .getByRole('button', { name: 'Undo undo of notes.txt' })
      .waitFor({ timeout: TIMEOUT });
    assert.equal(await undoButtons.count(), 2);
    assert.match(await rows.nth(2).textContent(), /edit_file.*undone/);
    await shot(page, 'undo-action-log');
  });
});
