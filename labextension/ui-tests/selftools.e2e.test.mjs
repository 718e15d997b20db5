/**
 * Browser test of the tools the agent writes for itself, against a real JupyterLab, real
 * think kernels, sandboxes and store; only the model is scripted (see harness.mjs): the agent
 * writes .think/tools/csvtools.py, the sidebar shows an approval card with the file, and once
 * approved the next request calls the tool, whose body runs in the sandbox.
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium).
 */

import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { SCRIPTS, launchLab, shot } from './harness.mjs';

const TIMEOUT = 90000;
const TOOL_PATH = '.think/tools/csvtools.py';
const TOOL = [
  'import csv',
  '',
  'READ_ONLY = ["summarize_csv"]',
  '',
  '',
  'def summarize_csv(path: str) -> dict:',
  '    """Summarize a CSV file: its columns and number of rows.',
  '',
  '    Args:',
  '        path: the CSV file, relative to the workspace',
  '    """',
  '    with open(path, newline="") as f:',
  '        rows = list(csv.reader(f))',
  '    return {"columns": rows[0], "rows": len(rows) - 1}',
  ''
].join('\n');

// Its own code writes the file (the sandbox's uid, as any code the agent runs).
const WRITE_TOOL = [
  'import os',
  "os.makedirs('.think/tools', exist_ok=True)",
  `open(${JSON.stringify(TOOL_PATH)}, 'w').write(${JSON.stringify(TOOL)})`
].join('\n');

Object.assign(SCRIPTS, {
  writeTool: [
    {
      text: 'I will write a tool for this.',
      tool_calls: [['execute_code', { code: WRITE_TOOL }]]
    },
    { text: 'Wrote summarize_csv; it loads once you approve the file.' }
  ],
  callTool: [
    { tool_calls: [['summarize_csv', { path: 'data.csv' }]] },
    { text: 'data.csv has 2 rows.' }
  ]
});

let ui;
let lab;
let page;

describe('Tools the agent writes', () => {
  before(async () => {
    ui = await launchLab({
      files: { 'data.csv': 'name,score\nada,3\nbob,5\n' },
      sidebar: true
    });
    ({ lab, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('a new tool file shows an approval card; approved, the tool runs', async () => {
    await page.getByRole('button', { name: 'New session' }).click();
    await page.waitForSelector('.jp-ThinkStatus[data-status="idle"]');
    await lab.script('writeTool');
    await page.fill(
      '.jp-ThinkComposer-input',
      'write a tool that summarizes CSVs'
    );
    await page.keyboard.press('Enter');
    // Writing into .think/ may ask first (as the file tools' policy says); then the step
    // after the write sees the new file: a card with the file as a diff.
    const pending = '.jp-ThinkApproval[data-status="pending"]';
    const card = page.locator(pending, { hasText: 'load_tool_file' });
    const write = page.locator(pending, { hasText: 'write_file' });
    await card.or(write).first().waitFor({ timeout: TIMEOUT });
    if (await write.count()) {
      await write.getByRole('button', { name: 'Approve', exact: true }).click();
    }
    await card.waitFor({ timeout: TIMEOUT });
    assert.match(
      await card.locator('.jp-ThinkApproval-title').textContent(),
      /load self-written tools from \.think\/tools\/csvtools\.py: summarize_csv/
    );
    const added = (
      await card.locator('.jp-ThinkDiff-add').allTextContents()
    ).join('\n');
    assert.match(added, /\+def summarize_csv\(path: str\) -> dict:/);
    await page.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
      timeout: TIMEOUT
    });
    await shot(page, 'selftool-approval', card);
    await card.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.waitForFunction(
      () => !document.querySelector('.jp-ThinkApproval[data-status="pending"]'),
      null,
      { timeout: TIMEOUT }
    );

    await lab.script('callTool');
    await page.fill('.jp-ThinkComposer-input', 'summarize data.csv');
    await page.keyboard.press('Enter');
    // The card of the call itself (the earlier execute_code card mentions the name too).
    const tool = page.locator('.jp-ThinkToolCard', {
      has: page.locator('.jp-ThinkToolCard-name', {
        hasText: /^summarize_csv$/
      })
    });
    await tool.waitFor({ timeout: TIMEOUT });
    await page.waitForSelector(
      '.jp-ThinkToolCard[data-status="complete"]:has-text("summarize_csv")',
      { timeout: TIMEOUT }
    );
    // A finished card may already show its output; a click on its header would fold it.
    const output = tool.locator('.jp-ThinkToolCard-output', {
      hasText: '"rows": 2'
    });
    if (!(await output.isVisible())) {
      await tool.locator('.jp-ThinkToolCard-header').click();
    }
    await output.waitFor({ timeout: TIMEOUT });
  });
});
