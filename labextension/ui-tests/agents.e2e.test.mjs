/**
 * Browser test of the agent type picker in the chat header, against a real JupyterLab, real
 * think kernels and the real store; only the model is scripted (see harness.mjs): a chat
 * switched to `reviewer` in the picker is offered no write tool, its `write_file` is refused
 * where tools are called, and the attempt is in the action log.
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium).
 */

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';

import { launchLab, shot } from './harness.mjs';

const TIMEOUT = 60000;

let ui;
let lab;
let page;

describe('The agent type picker', () => {
  before(async () => {
    ui = await launchLab({ sidebar: true });
    ({ lab, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('a chat switched to reviewer cannot write, and the attempt is logged', async () => {
    await page.getByRole('button', { name: 'New session' }).click();
    const picker = page.getByRole('combobox', { name: 'Agent type' });
    await picker.waitFor({ timeout: TIMEOUT });
    assert.equal(await picker.inputValue(), 'general');
    const names = await picker.locator('option').allTextContents();
    assert.ok(
      ['general', 'explorer', 'reviewer'].every(n => names.includes(n)),
      names
    );
    const sessionId = await page.evaluate(
      () => document.querySelector('.jp-ThinkSessions-select')?.value
    );
    assert.ok(sessionId);

    await picker.selectOption('reviewer');
    await page.waitForFunction(
      () =>
        document.querySelector('.jp-ThinkAgentPicker select')?.value ===
          'reviewer' &&
        !document.querySelector('.jp-ThinkAgentPicker select')?.disabled
    );
    const session = await lab.api('GET', `sessions/${sessionId}`);
    assert.equal(session.options.agent, 'reviewer');
    await shot(page, 'agent-picker', page.locator('.jp-ThinkChat-header'));

    await lab.scriptReplies([
      {
        tool_calls: [
          ['write_file', { path: 'review.txt', content: 'should not exist\n' }]
        ]
      },
      { text: 'I may not write; here is my review instead.' }
    ]);
    await page.fill('.jp-ThinkComposer-input', 'Fix the typo in notes.md');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
      timeout: TIMEOUT
    });
    await page
      .getByText('I may not write; here is my review instead.')
      .waitFor({ timeout: TIMEOUT });

    assert.equal(fs.existsSync(path.join(lab.root, 'review.txt')), false);
    const { actions } = await lab.api('GET', `sessions/${sessionId}/actions`);
    const refused = actions.filter(a => a.tool === 'write_file');
    assert.equal(refused.length, 1);
    assert.equal(refused[0].success, false);
    assert.match(refused[0].error, /not allowed for the 'reviewer' agent type/);
  });
});
