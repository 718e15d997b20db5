/**
 * Browser test of reminders against a real JupyterLab, real think kernels and the
 * real store; only the model is scripted (see harness.mjs). A reminder set in one session
 * fires while the sidebar shows another: a JupyterLab notification appears, and its action
 * opens the reminder's session, where the reminder's message is marked as one.
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium).
 */

import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { SCRIPTS, launchLab, openChat, shot } from './harness.mjs';

const TIMEOUT = 60000;

Object.assign(SCRIPTS, {
  reminder: [
    {
      text: 'Setting it.',
      tool_calls: [
        [
          'schedule_reminder',
          { when: 'in 3 seconds', message: 'take the cake out' }
        ]
      ]
    },
    { text: 'Reminder set.' },
    { text: 'The cake is out.' }
  ]
});

let ui;
let lab;
let page;

describe('Reminders', () => {
  before(async () => {
    ui = await launchLab({ sidebar: true });
    ({ lab, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('a fired reminder notifies, and its action opens its session', async () => {
    // The reminder's session, set up over the API; the sidebar shows another one.
    const oven = await lab.api('POST', 'sessions', { title: 'Baking' });
    const other = await lab.api('POST', 'sessions', { title: 'Elsewhere' });
    await page.evaluate(
      id => window.localStorage.setItem('think:last-session', id),
      other.id
    );
    await page.reload();
    await page.waitForSelector('#jp-main-dock-panel', { timeout: TIMEOUT });
    await openChat(page);
    await page.waitForFunction(
      id => document.querySelector('.jp-ThinkSessions-select')?.value === id,
      other.id,
      { timeout: TIMEOUT }
    );

    await lab.script('reminder');
    await lab.api('POST', `sessions/${oven.id}/messages`, {
      content: 'remind me to take the cake out in a few seconds'
    });

    const toast = page
      .locator('.Toastify__toast')
      .filter({ hasText: 'take the cake out' });
    await toast.waitFor({ timeout: TIMEOUT });
    assert.match(await toast.textContent(), /Reminder \(Baking\)/);
    await shot(page, 'reminder-notification', toast);
    // Still on the other session until the action is used.
    assert.equal(
      await page.locator('.jp-ThinkSessions-select').inputValue(),
      other.id
    );
    await toast.getByRole('button', { name: 'Open session' }).click();

    await page.waitForFunction(
      id => document.querySelector('.jp-ThinkSessions-select')?.value === id,
      oven.id,
      { timeout: TIMEOUT }
    );
    // The reminder's message, marked as one (not as something the user typed).
    const reminder = page
      .locator('.jp-ThinkMessage.jp-mod-user')
      .filter({ has: page.locator('.jp-ThinkReminderNote') });
    await reminder.waitFor({ timeout: TIMEOUT });
    assert.match(await reminder.textContent(), /take the cake out/);
    assert.equal(
      await reminder.locator('.jp-ThinkReminderNote').getAttribute('data-late'),
      'false'
    );
    await page.waitForFunction(
      () =>
        [...document.querySelectorAll('.jp-ThinkMessage.jp-mod-assistant')]
          .map(m => m.textContent)
          .join(' ')
          .includes('The cake is out.'),
      null,
      { timeout: TIMEOUT }
    );
    await shot(page, 'reminder-in-chat', page.locator('.jp-ThinkChat').first());
  });
});
