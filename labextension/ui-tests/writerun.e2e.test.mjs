/**
 * Write-then-run is exact while a person has the file open in a JupyterLab editor tab: the
 * agent's write, then a sandboxed `cat` of the file, prints what was written every round,
 * and the run reports no file changed; with the person typing in the file meanwhile, both
 * the agent's edits and the typing survive (in the editor and on disk).
 *
 * THINK_WRITERUN_ROUNDS sets the rounds of each test (default: what fits CI; the 100-round
 * run is `node bench/writerun.mjs`).
 */

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';

import { launchLab, openFile } from './harness.mjs';
import {
  newSession,
  typingRounds,
  waitDisk,
  waitEditor,
  writeRounds
} from './writerun.mjs';

const ROUNDS = Number(process.env.THINK_WRITERUN_ROUNDS ?? 36);

let ui;
let lab;
let context;

// Each test starts its own server: the first room the agent uses is what the bug of a tab
// opened before it was about, so a test must not inherit a server another test warmed.
describe('write then run with the file open in JupyterLab', () => {
  beforeEach(async () => {
    ui = await launchLab({ page: false });
    ({ lab, context } = ui);
  });

  afterEach(async t => {
    await lab?.reportFailure(t);
    await ui?.close();
    ui = lab = context = undefined;
  });

  test('the run reads what the agent wrote, every round', async () => {
    fs.writeFileSync(path.join(lab.root, 'open.txt'), 'start\n');
    const { page, editor } = await openFile(context, lab, 'open.txt');
    await editor.getByText('start').waitFor();
    const sid = await newSession(lab);
    const { stale, reported, total } = await writeRounds(
      lab,
      sid,
      'open.txt',
      ROUNDS
    );
    assert.deepEqual(
      stale,
      [],
      `${stale.length} of ${total} runs read an old text`
    );
    assert.deepEqual(
      reported,
      [],
      'a run reported the save of the agent write'
    );
    // The tab shows the last write.
    const last = fs
      .readFileSync(path.join(lab.root, 'open.txt'), 'utf8')
      .trim();
    await editor.getByText(last).waitFor();
    await page.close();
  });

  test('a person types in the file while the agent edits it and runs', async () => {
    fs.writeFileSync(path.join(lab.root, 'typed.txt'), 'title\nagent 0\n');
    const { page, editor } = await openFile(context, lab, 'typed.txt');
    await editor.getByText('agent 0').waitFor();
    const sid = await newSession(lab);
    const rounds = Math.max(6, Math.floor(ROUNDS / 2));
    const { stale, reported, typed } = await typingRounds(
      lab,
      page,
      editor,
      sid,
      'typed.txt',
      rounds
    );
    assert.ok(typed.length > 0, 'the person typed');
    assert.deepEqual(
      stale,
      [],
      `${stale.length} of ${rounds} runs missed the agent edit`
    );
    assert.deepEqual(
      reported,
      [],
      'a run reported the save of the edit or the typing'
    );
    const want = `title${typed}\nagent ${rounds}\n`;
    await waitEditor(page, want);
    await waitDisk(lab, 'typed.txt', want);
    await page.close();
  });
});
