/**
 * Browser test of live apps and "Run in background" against a real JupyterLab, real think
 * kernels, the real sandbox, store and app proxy; only the model is scripted (see
 * harness.mjs). One server for all steps.
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium).
 */

import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { launchLab, notebookText, shot } from './harness.mjs';

const TIMEOUT = 90000;

let ui;
let lab;
let page;

/** The Think session of notebook `path`, once its kernel made one. */
async function sessionOf(path) {
  const deadline = Date.now() + TIMEOUT;
  for (;;) {
    const { sessions } = await lab.api('GET', 'sessions');
    const found = sessions.find(
      s => s.kind === 'notebook' && `/${s.path}`.endsWith(`/${path}`)
    );
    if (found) {
      return found.id;
    }
    if (Date.now() > deadline) {
      throw new Error(`no session for ${path}: ${JSON.stringify(sessions)}`);
    }
    await new Promise(r => setTimeout(r, 200));
  }
}

describe('Live apps and background runs', () => {
  before(async () => {
    ui = await launchLab({
      notebook: 'bg.ipynb',
      files: {
        'bg.ipynb': notebookText([
          '%%bash\nfor i in 1 2 3; do echo "step $i"; sleep 0.3; done'
        ])
      }
    });
    ({ lab, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('Run in background turns a %%bash cell into a job the cell follows', async () => {
    const cell = page.locator('.jp-NotebookPanel .jp-CodeCell').first();
    await cell.locator('.jp-InputArea-editor').click({ button: 'right' });
    const item = page.locator('.lm-Menu-item', {
      hasText: 'Run in background (Think job)'
    });
    await item.waitFor({ timeout: TIMEOUT });
    await item.click();

    // The cell now says what ran, and follows the job to its end.
    await page.waitForFunction(
      () =>
        document
          .querySelector('.jp-NotebookPanel .jp-CodeCell .cm-content')
          ?.textContent?.startsWith('%%think_job'),
      null,
      { timeout: TIMEOUT }
    );
    const output = cell.locator('.jp-OutputArea-output');
    await page.waitForFunction(
      () => {
        const out =
          document.querySelector(
            '.jp-NotebookPanel .jp-CodeCell .jp-OutputArea'
          )?.textContent ?? '';
        return /job \S+: done/.test(out) && out.includes('step 3');
      },
      null,
      { timeout: TIMEOUT }
    );
    assert.match(await output.first().textContent(), /job job-\d+: done/);
    await shot(page, 'run-in-background', cell);

    // It ran as a job of the notebook's session.
    const sid = await sessionOf('bg.ipynb');
    const { jobs } = await lab.api('GET', `sessions/${sid}/jobs`);
    assert.equal(jobs.length, 1);
    assert.equal(jobs[0].state, 'done');
  });
});
