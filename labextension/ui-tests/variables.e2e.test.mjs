/**
 * Browser test of `@name` in the composer: a notebook on a python3 kernel defines a
 * DataFrame `df`; typing `@df` in the chat shows a chip with its schema, sending attaches
 * that summary (what the scripted model received), and the notebook's execution count is
 * untouched (its next cell is [2]). Real JupyterLab, python3 kernel, think kernel and
 * store; only the model is scripted (see harness.mjs).
 */

import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { kernelIdle, launchLab, notebookText, shot } from './harness.mjs';

const TIMEOUT = 90000;
const SETUP =
  "import pandas as pd\ndf = pd.DataFrame({'city': ['Oslo', 'Lima'], 'temp': [3.5, None]})";

let ui;
let lab;

/** The execution count a cell's prompt shows (`[3]:` -> "3"), "" when it has none. */
async function prompt(page, index) {
  const text = await page
    .locator('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')
    .nth(index)
    .textContent();
  return (text ?? '').replace(/[^0-9]/g, '');
}

/** Run cell `index` (Shift+Enter) and wait for the count its prompt then shows. */
async function run(page, index) {
  const cell = page.locator('.jp-NotebookPanel .jp-CodeCell').nth(index);
  await cell.locator('.cm-content').click();
  await page.keyboard.press('Shift+Enter');
  await page.waitForFunction(
    i => {
      const p = document.querySelectorAll(
        '.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt'
      )[i];
      return p && /\[\d+\]/.test(p.textContent ?? '');
    },
    index,
    { timeout: TIMEOUT }
  );
}

describe('@name attaches a variable of the notebook', () => {
  before(async () => {
    ui = await launchLab({
      files: {
        'vars.ipynb': notebookText(
          [SETUP, 'n = len(df)', 'import time\ntime.sleep(4)'],
          'python3'
        )
      },
      notebook: 'vars.ipynb',
      sidebar: true
    });
    lab = ui.lab;
    await kernelIdle(ui.page);
  });

  after(async () => {
    await ui?.close();
  });

  afterEach(async t => {
    await lab?.reportFailure(t);
  });

  test('@df makes a chip with the schema, sent to the model, count unchanged', async () => {
    const { page } = ui;
    await run(page, 0);
    assert.equal(await prompt(page, 0), '1');
    await lab.scriptReplies([{ text: 'df has two cities.' }]);
    const input = page.locator('.jp-ThinkComposer-input');
    await input.fill('What is in @df ?');
    const chip = page.locator('.jp-ThinkAttachment[data-kind="variables"]');
    await chip.waitFor({ timeout: TIMEOUT });
    assert.equal(
      (await chip.locator('.jp-ThinkAttachment-name').textContent()).trim(),
      '@df · DataFrame 2×2'
    );
    const summary = await chip.getAttribute('title');
    assert.match(summary, /df: pandas\.DataFrame, 2 rows × 2 columns/);
    assert.match(summary, /temp float64 \(1 null\)/);
    await shot(page, 'variables-chip', page.locator('.jp-ThinkComposer'));
    await input.press('Enter');
    await page.waitForSelector('.jp-ThinkMessage.jp-mod-assistant', {
      timeout: TIMEOUT
    });
    const stats = await lab.modelStats();
    const request = stats.requests.at(-1);
    const user = request.messages.filter(m => m.role === 'user').at(-1);
    const content =
      typeof user.content === 'string'
        ? user.content
        : user.content.map(p => p.text ?? '').join('');
    assert.match(content, /What is in @df \?/);
    assert.match(content, /<variable notebook="vars\.ipynb">/);
    assert.match(content, /df: pandas\.DataFrame, 2 rows × 2 columns/);
    assert.match(content, /columns: city str, temp float64 \(1 null\)/);
    assert.match(content, /Oslo/);
    // The sent message shows what went with it.
    await page
      .locator(
        '.jp-ThinkMessage.jp-mod-user .jp-ThinkAttachment[data-kind="variables"]'
      )
      .waitFor({ timeout: TIMEOUT });
    // The kernel's count did not move: the first cell still shows [1], the next runs as [2].
    assert.equal(await prompt(page, 0), '1');
    await run(page, 1);
    assert.equal(await prompt(page, 1), '2');
  });

  test('a name the kernel does not have gets no chip', async () => {
    const { page } = ui;
    const input = page.locator('.jp-ThinkComposer-input');
    await input.fill('and @nothing_here or @df');
    const chips = page.locator(
      '.jp-ThinkComposer .jp-ThinkAttachment[data-kind="variables"]'
    );
    await chips.first().waitFor({ timeout: TIMEOUT });
    // Both names were asked in one request: once @df's chip shows, the other was answered.
    assert.deepEqual(
      await chips.locator('.jp-ThinkAttachment-name').allTextContents(),
      ['@df · DataFrame 2×2']
    );
    await chips.first().getByRole('button').click();
    await chips.first().waitFor({ state: 'detached', timeout: TIMEOUT });
    await input.fill('');
  });

  test('a busy kernel shows on the chip, which fills in once the cell ends', async () => {
    const { page } = ui;
    const cell = page.locator('.jp-NotebookPanel .jp-CodeCell').nth(2);
    await cell.locator('.cm-content').click();
    await page.keyboard.press('Shift+Enter');
    await page.waitForFunction(
      () =>
        document
          .querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')[2]
          ?.textContent?.includes('*'),
      null,
      { timeout: TIMEOUT }
    );
    await page.locator('.jp-ThinkComposer-input').fill('now @df');
    const chip = page.locator(
      '.jp-ThinkComposer .jp-ThinkAttachment[data-kind="variables"]'
    );
    await page
      .locator('.jp-ThinkComposer .jp-ThinkAttachment.jp-mod-error')
      .waitFor({ timeout: TIMEOUT });
    assert.equal(
      (await chip.locator('.jp-ThinkAttachment-error').textContent()).trim(),
      'kernel busy'
    );
    await page.waitForFunction(
      () =>
        document
          .querySelector(
            '.jp-ThinkComposer .jp-ThinkAttachment[data-kind="variables"] .jp-ThinkAttachment-name'
          )
          ?.textContent?.includes('DataFrame'),
      null,
      { timeout: TIMEOUT }
    );
    assert.equal(await chip.count(), 1);
    await page.locator('.jp-ThinkComposer-input').fill('');
  });
});
