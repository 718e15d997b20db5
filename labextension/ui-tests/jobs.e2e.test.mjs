/**
 * Browser test of background jobs against a real JupyterLab, real think kernels, the real
 * sandbox and store; only the model is scripted (see harness.mjs). The agent starts a job
 * that prints its progress: the sidebar shows it live (percentage, lines, time), its Stop
 * ends the job, and a JupyterLab notification says how it ended.
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium).
 */

import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { SCRIPTS, launchLab, openChat, shot } from './harness.mjs';

const TIMEOUT = 60000;

Object.assign(SCRIPTS, {
  job: [
    {
      text: 'Starting it.',
      tool_calls: [
        [
          'run_job',
          {
            command:
              'for i in $(seq 1 3000); do echo "epoch $i $((i / 30))%"; sleep 0.1; done',
            name: 'train'
          }
        ]
      ]
    },
    { text: 'Training runs in the background.' }
  ]
});

let ui;
let lab;
let page;

describe('Background jobs', () => {
  before(async () => {
    ui = await launchLab({ sidebar: true });
    ({ lab, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('a job shows its progress in the sidebar and Stop ends it', async () => {
    const s = await lab.api('POST', 'sessions', { title: 'Jobs' });
    await page.evaluate(
      id => window.localStorage.setItem('think:last-session', id),
      s.id
    );
    await page.reload();
    await page.waitForSelector('#jp-main-dock-panel', { timeout: TIMEOUT });
    await openChat(page);
    await page.waitForFunction(
      id => document.querySelector('.jp-ThinkSessions-select')?.value === id,
      s.id,
      { timeout: TIMEOUT }
    );

    await lab.script('job');
    await lab.api('POST', `sessions/${s.id}/messages`, {
      content: 'train the model in the background'
    });

    // Live progress: the percentage it printed moves on, with its lines and time.
    const line = page.locator('.jp-ThinkJobs-line');
    await page.waitForFunction(
      () =>
        /^train: running · [1-9]\d*% · \d+ lines · \d+ s$/.test(
          document.querySelector('.jp-ThinkJobs-line')?.textContent ?? ''
        ),
      null,
      { timeout: TIMEOUT }
    );
    const first = await line.textContent();
    await page.waitForFunction(
      before =>
        (document.querySelector('.jp-ThinkJobs-line')?.textContent ?? '') !==
        before,
      first,
      { timeout: TIMEOUT }
    );
    const bar = page.locator('.jp-ThinkJobs-bar');
    assert.ok(Number(await bar.getAttribute('value')) >= 1);
    await shot(page, 'job-progress', page.locator('.jp-ThinkJobs'));

    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    await page.waitForFunction(
      () =>
        (
          document.querySelector('.jp-ThinkJobs-line')?.textContent ?? ''
        ).startsWith('train: stopped'),
      null,
      { timeout: TIMEOUT }
    );
    assert.equal(await page.locator('.jp-ThinkJobs-stop').count(), 0);
    const toast = page
      .locator('.Toastify__toast')
      .filter({ hasText: "Background job 'train' ended (stopped" });
    await toast.waitFor({ timeout: TIMEOUT });
    assert.match(await toast.textContent(), /Think \(Jobs\)/);
    const listed = await lab.api('GET', `sessions/${s.id}/jobs`);
    assert.equal(listed.jobs[0].state, 'stopped');
    assert.equal(listed.jobs[0].error, 'stopped from the sidebar');
  });
});
