/**
 * Browser tests of the agent's questions (`ask_user`) against a real JupyterLab, real
 * think kernels and the real store; only the model is scripted (see harness.mjs).
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium).
 */

import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { SCRIPTS, launchLab, openChat, shot } from './harness.mjs';

const TIMEOUT = 60000;
const ASK = [
  'ask_user',
  { question: 'Which colour?', options: ['red', 'green', 'blue'] }
];

Object.assign(SCRIPTS, {
  askColour: [
    { text: 'Let me ask.', tool_calls: [ASK] },
    { text: 'Painting it green.' }
  ]
});

let ui;
let lab;

async function lastToolText() {
  const stats = await lab.modelStats();
  const last = stats.requests[stats.requests.length - 1].messages;
  return last.filter(m => m.role === 'tool').pop()?.content;
}

describe('Questions from the agent', () => {
  before(async () => {
    ui = await launchLab({ page: false });
    ({ lab } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('answered in the sidebar, the run goes on; a second tab updates', async () => {
    const page = await ui.context.newPage();
    await page.goto(`${lab.url}/lab?token=${lab.token}&reset`);
    await openChat(page);
    await page.getByRole('button', { name: 'New session' }).click();
    await page.waitForSelector('.jp-ThinkStatus[data-status="idle"]');
    await lab.script('askColour');
    await page.fill('.jp-ThinkComposer-input', 'paint it');
    await page.keyboard.press('Enter');
    const card = page.locator('.jp-ThinkQuestion.jp-mod-pending');
    await card.waitFor({ timeout: TIMEOUT });
    assert.match(await card.innerText(), /Which colour\?/);
    const buttons = card.getByRole('button');
    assert.deepEqual(await buttons.allInnerTexts(), ['red', 'green', 'blue']);
    // No text box: this question takes only its options.
    assert.equal(await card.getByRole('textbox').count(), 0);
    await shot(page, 'question-pending', card);
    // A second tab on the same session shows the card too (loaded from the REST API).
    const sid = await page.locator('.jp-ThinkSessions-select').inputValue();
    const watcher = await ui.context.newPage();
    await watcher.goto(`${lab.url}/lab?token=${lab.token}&reset`);
    await openChat(watcher);
    await watcher.locator('.jp-ThinkSessions-select').selectOption(sid);
    await watcher
      .locator('.jp-ThinkQuestion.jp-mod-pending')
      .waitFor({ timeout: TIMEOUT });
    // Keyboard: focus the option and press Enter.
    await card.getByRole('button', { name: 'Answer: green' }).focus();
    await page.keyboard.press('Enter');
    // The card leaves; the ask_user call's card in the transcript shows the answer.
    const answered = page.locator(
      '.jp-ThinkQuestionLine[data-status="answered"]'
    );
    await answered.waitFor({ timeout: TIMEOUT });
    assert.match(await answered.innerText(), /via sidebar: green/);
    assert.equal(
      await page.locator('.jp-ThinkQuestion.jp-mod-pending').count(),
      0
    );
    await page.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
      timeout: TIMEOUT
    });
    assert.equal(await lastToolText(), 'The user answered: green');
    // The second tab's card settled to the same answer (the first answer wins everywhere).
    const theirs = watcher.locator(
      '.jp-ThinkQuestionLine[data-status="answered"]'
    );
    await theirs.waitFor({ timeout: TIMEOUT });
    assert.match(await theirs.innerText(), /via sidebar: green/);
    const late = await lab
      .api(
        'POST',
        `sessions/${sid}/questions/${await theirs.getAttribute('data-question-id')}`,
        {
          answer: 'red'
        }
      )
      .then(
        () => 'accepted',
        e => String(e)
      );
    assert.match(late, /409/);
    await watcher.close();
    await page.close();
  });
});
