/**
 * Browser test of "Ask Think" on a failing cell of a python3 notebook: the button on the
 * error output opens the chat bound to the notebook with the cell, its traceback and the
 * kernel; the agent's edit_cell lands in the open notebook tab through the room; the re-run
 * (execute_cell) waits for the person's approval, then runs in the notebook's own kernel
 * and its new output shows in the cell. Real JupyterLab, kernels, rooms and store; only
 * the model is scripted (see harness.mjs).
 */

import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { launchLab, openNotebook, shot } from './harness.mjs';

const TIMEOUT = 90000;
const PATH = 'fix.ipynb';

/** A python3 notebook whose second cell divides by zero. */
const NOTEBOOK = JSON.stringify({
  cells: [
    ['cell-setup', 'total = 10\ncount = 0'],
    ['cell-mean', 'mean = total / count\nprint("mean", mean)'],
    ['cell-after', 'print("done")']
  ].map(([id, source]) => ({
    id,
    cell_type: 'code',
    execution_count: null,
    metadata: {},
    outputs: [],
    source
  })),
  metadata: {
    kernelspec: {
      name: 'python3',
      display_name: 'Python 3',
      language: 'python'
    }
  },
  nbformat: 4,
  nbformat_minor: 5
});
const FIXED = 'mean = total / max(count, 1)\nprint("mean", mean)';

let ui;
let lab;

/** Run cell `index` of the open notebook as a person does (click, Shift+Enter), and wait
 * for the execution count its prompt then shows. */
async function runCell(page, index) {
  const cell = page.locator('.jp-NotebookPanel .jp-CodeCell').nth(index);
  await cell.locator('.cm-content').click();
  await page.keyboard.press('Shift+Enter');
  await cell
    .locator('.jp-InputPrompt', { hasText: /\[\d+\]/ })
    .waitFor({ timeout: TIMEOUT });
  return cell;
}

describe('Ask Think on an error', () => {
  before(async () => {
    ui = await launchLab({ page: false, files: { [PATH]: NOTEBOOK } });
    ({ lab } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('the fix lands in the cell; the re-run waits for consent', async () => {
    const page = await openNotebook(ui.context, lab, PATH);
    await page
      .getByText('Python 3 (ipykernel) | Idle')
      .waitFor({ timeout: TIMEOUT });
    await runCell(page, 0);
    const failing = await runCell(page, 1);
    const ask = failing.locator('.jp-OutputArea .jp-ThinkAskError');
    await ask.waitFor({ timeout: TIMEOUT });
    assert.match(
      await failing.locator('.jp-OutputArea').innerText(),
      /ZeroDivisionError/
    );
    // A cell without an error has no button.
    assert.equal(await page.locator('.jp-ThinkAskError').count(), 1);
    await shot(page, 'ask-think-button', failing);
    // The cell's context menu offers the same.
    await failing.locator('.jp-InputArea-prompt').click({ button: 'right' });
    const item = page.locator('.lm-Menu-item', {
      hasText: 'Ask Think about this cell'
    });
    await item.waitFor({ timeout: TIMEOUT });
    await page.keyboard.press('Escape');
    await item.waitFor({ state: 'hidden', timeout: TIMEOUT });
    await lab.scriptReplies([
      { text: 'Let me look.', tool_calls: [['read_notebook', { path: PATH }]] },
      {
        text: 'count is 0: guard the division.',
        tool_calls: [
          ['edit_cell', { path: PATH, cell_id: 'cell-mean', source: FIXED }]
        ]
      },
      {
        text: 'Now I re-run it.',
        tool_calls: [['execute_cell', { path: PATH, cell_id: 'cell-mean' }]]
      },
      { text: 'Fixed: the cell prints mean 10.0.' }
    ]);
    await ask.click();
    // The chat opens on the notebook's chat; the message shows the cells sent.
    const sent = page.locator('.jp-ThinkMessage.jp-mod-user').last();
    await sent.waitFor({ timeout: TIMEOUT });
    assert.match(await sent.innerText(), /Fix the error in cell 2/);
    assert.match(await sent.innerText(), /3 cells of fix\.ipynb/);
    // The agent's edit shows in the open notebook, live.
    await failing
      .locator('.cm-content', { hasText: 'max(count, 1)' })
      .waitFor({ timeout: TIMEOUT });
    // The re-run asks first: nothing has run yet.
    const card = page.locator('.jp-ThinkApproval.jp-mod-pending');
    await card.waitFor({ timeout: TIMEOUT });
    assert.match(await card.innerText(), /execute_cell/);
    assert.match(
      await failing.locator('.jp-OutputArea').innerText(),
      /ZeroDivisionError/
    );
    await shot(page, 'ask-think-approval', page.locator('.jp-ThinkChat'));
    await card.getByRole('button', { name: 'Approve', exact: true }).click();
    // The cell ran in the notebook's kernel (it knows `total` from the first cell).
    await failing
      .locator('.jp-OutputArea', { hasText: 'mean 10.0' })
      .waitFor({ timeout: TIMEOUT });
    await page.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
      timeout: TIMEOUT
    });
    await shot(page, 'ask-think-fixed');
    // What the model was sent: the source, the traceback (no ANSI codes), the kernel.
    const { requests } = await lab.modelStats();
    const first = JSON.stringify(requests[0].messages);
    assert.match(first, /mean = total \/ count/);
    assert.match(first, /ZeroDivisionError/);
    assert.match(first, /division by zero/);
    assert.match(first, /python3/);
    assert.doesNotMatch(first, /\\u001b\[/);
    // The model read the new output of the re-run.
    const last = requests[requests.length - 1].messages;
    const tool = last.filter(m => m.role === 'tool').pop();
    assert.match(tool.content, /mean 10\.0/);
  });
});
