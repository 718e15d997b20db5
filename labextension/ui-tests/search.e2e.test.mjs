/**
 * Browser test of the sidebar's search over all sessions, against a real JupyterLab, real
 * think kernels and the real store; only the model is scripted (see harness.mjs): a decision
 * said in one chat is found from another, and the hit opens the first chat at its message.
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium).
 */

import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { launchLab, shot } from './harness.mjs';

const TIMEOUT = 60000;

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

async function search(p, text) {
  const box = p.getByRole('searchbox', { name: 'Search all sessions' });
  await box.fill(text);
  await box.press('Enter');
}

describe('Search over all sessions in the sidebar', () => {
  before(async () => {
    ui = await launchLab({ sidebar: true });
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
});
