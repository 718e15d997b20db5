/**
 * Browser tests of the tasks area and the subagent drill-in against a real
 * JupyterLab, real think kernels and the real store; only the model is scripted (see
 * harness.mjs). The main conversation plans three tasks and delegates two of them to
 * subagents, whose conversations have their own scripts (picked by a word of their
 * instructions) and meet at a barrier, so they provably run at the same time.
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium),
 * or only these: `node --test --test-reporter=spec ui-tests/tasks.e2e.test.mjs`.
 */

import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { SCRIPTS, launchLab, openChat, shot } from './harness.mjs';

const TIMEOUT = 90000;
const REQUEST = 'Summarise the workspace for me';

Object.assign(SCRIPTS, {
  tasks: [
    {
      text: 'I will plan this in three tasks.',
      tool_calls: [
        [
          'create_subtask',
          {
            title: 'Count the lines',
            type: 'explore',
            name: 'count',
            description: 'How long is notes.md?'
          }
        ],
        [
          'create_subtask',
          { title: 'List the files', type: 'explore', name: 'list' }
        ],
        [
          'create_subtask',
          {
            title: 'Write the summary',
            type: 'code',
            name: 'summary',
            dependencies: ['count', 'list']
          }
        ]
      ]
    },
    {
      text: 'Two subagents will look at the workspace.',
      tool_calls: [
        [
          'delegate_to_subagent',
          { task: 'count', instructions: 'ALPHA: count the lines of notes.md' }
        ],
        [
          'delegate_to_subagent',
          { task: 'list', instructions: 'BETA: list the files' }
        ]
      ]
    },
    { text: 'Waiting for them.', tool_calls: [['wait_for_subagents', {}]] },
    {
      tool_calls: [
        [
          'complete_task',
          { task_id: 'summary', result: 'notes.md: 3 lines; 2 files' }
        ]
      ]
    },
    { text: 'Done: notes.md has 3 lines and the workspace holds 2 files.' },
    // The subagents' conversations: both first replies wait at a barrier for each other.
    {
      conversation: 'ALPHA',
      text: 'Counting the lines of notes.md with wc, one moment.',
      delay: 0.05,
      barrier: 'both',
      tool_calls: [['bash', { command: 'sleep 2; wc -l notes.md' }]]
    },
    {
      conversation: 'ALPHA',
      text: 'notes.md has 3 lines.',
      delay: 0.05
    },
    {
      conversation: 'BETA',
      text: 'Listing the workspace files now.',
      delay: 0.05,
      barrier: 'both',
      tool_calls: [['bash', { command: 'sleep 2; ls' }]]
    },
    {
      conversation: 'BETA',
      text: 'The workspace holds notes.md and analysis.ipynb.',
      delay: 0.05
    }
  ]
});

let ui;
let lab;
let page;

async function newSession(p) {
  const known = (await lab.api('GET', 'sessions')).sessions.map(s => s.id);
  await p.getByRole('button', { name: 'New session' }).click();
  await p.waitForFunction(known => {
    const el = document.querySelector('.jp-ThinkSessions-select');
    return el && el.value && !known.includes(el.value);
  }, known);
  await p.waitForSelector('.jp-ThinkStatus[data-status="idle"]');
}

async function waitIdle(p) {
  await p.waitForFunction(
    () =>
      document
        .querySelector('.jp-ThinkChat-body')
        ?.getAttribute('data-running') === 'false' &&
      document.querySelector('.jp-ThinkStatus')?.getAttribute('data-status') ===
        'idle',
    null,
    { timeout: TIMEOUT }
  );
}

/** Every value the overall progress bar showed, sampled each frame, until it shows 100. */
function sampleProgress(p) {
  return p.evaluate(
    timeout =>
      new Promise((resolve, reject) => {
        const seen = [];
        const t0 = performance.now();
        const tick = () => {
          const bar = document.querySelector(
            '[role="progressbar"][aria-label="Overall progress"]'
          );
          const v = bar ? Number(bar.getAttribute('aria-valuenow')) : null;
          if (v !== null && seen[seen.length - 1] !== v) {
            seen.push(v);
          }
          if (v === 100) {
            resolve(seen);
          } else if (performance.now() - t0 > timeout) {
            reject(new Error(`progress never reached 100: ${seen}`));
          } else {
            requestAnimationFrame(tick);
          }
        };
        tick();
      }),
    TIMEOUT
  );
}

async function theme(p, name) {
  await p.locator('.lm-MenuBar-itemLabel:text-is("Settings")').click();
  await p.locator('.lm-Menu-itemLabel:text-is("Theme")').hover();
  await p.locator(`.lm-Menu-itemLabel:text-is("${name}")`).click();
  await p.waitForFunction(
    light => document.body.dataset.jpThemeLight === light,
    name.endsWith('Light') ? 'true' : 'false',
    { timeout: TIMEOUT }
  );
  // JupyterLab covers the page with its splash screen while the theme loads.
  await p.waitForSelector('#jupyterlab-splash', {
    state: 'detached',
    timeout: TIMEOUT
  });
}

const tasksArea = p => p.getByRole('region', { name: 'Tasks' });
const row = (p, title) =>
  p.locator(`li.jp-ThinkTask[aria-label="Task ${title}"]`);
const drillIn = (p, title) =>
  p.getByRole('region', { name: `Subagent: ${title}` });
const mainText = p =>
  p.evaluate(() =>
    [...document.querySelectorAll('.jp-ThinkMessages .jp-ThinkMessage')]
      .map(m => m.textContent)
      .join('\n')
  );

describe('Tasks and subagents in the sidebar', () => {
  before(async () => {
    ui = await launchLab({ sidebar: true });
    ({ lab, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('the tree, two subagents at once, progress to complete, a live drill-in', async () => {
    await newSession(page);
    await lab.script('tasks');
    const progress = sampleProgress(page);
    await page.fill('.jp-ThinkComposer-input', REQUEST);
    await page.keyboard.press('Enter');

    await tasksArea(page).waitFor({ timeout: TIMEOUT });
    await row(page, 'Write the summary')
      .getByRole('note')
      .filter({ hasText: 'waits for Count the lines, List the files' })
      .waitFor({ timeout: TIMEOUT });
    assert.equal(
      await row(page, 'Write the summary').getAttribute('data-status'),
      'blocked'
    );
    // Both subagents run at the same time (their scripts meet at a barrier).
    await page.waitForFunction(
      () =>
        document.querySelectorAll(
          '.jp-ThinkTask .jp-ThinkSubagentBadge[data-status="running"]'
        ).length === 2,
      null,
      { timeout: TIMEOUT }
    );
    assert.equal(
      await row(page, 'Count the lines')
        .locator('.jp-ThinkTask-type')
        .first()
        .textContent(),
      'explore'
    );
    await shot(page, 'tasks-running', page.locator('.jp-ThinkChat'));

    // Drill into one subagent while it works: its text and tool card, live.
    await page
      .getByRole('button', { name: 'Open the subagent of Count the lines' })
      .click();
    const view = drillIn(page, 'Count the lines');
    await view.waitFor({ timeout: TIMEOUT });
    await view
      .locator('.jp-ThinkToolCard[data-status="running"]')
      .waitFor({ timeout: TIMEOUT });
    assert.match(
      await view.locator('.jp-ThinkToolCard-name').first().textContent(),
      /bash/
    );
    await shot(page, 'tasks-drill-in-live', page.locator('.jp-ThinkChat'));
    await view
      .locator('.jp-ThinkMessage')
      .filter({ hasText: 'notes.md has 3 lines.' })
      .waitFor({ timeout: TIMEOUT });
    await page
      .locator(
        '.jp-ThinkSubagent[data-status="complete"] .jp-ThinkToolCard[data-status="complete"]'
      )
      .waitFor({ timeout: TIMEOUT });
    assert.match(
      await view.textContent(),
      /Counting the lines of notes\.md with wc/
    );
    await page.getByRole('button', { name: 'Back to the chat' }).click();
    await page.locator('.jp-ThinkMessages').first().waitFor();
    assert.equal(await view.count(), 0);

    await waitIdle(page);
    // The area folds to its header when the request ends; pinned, it stays open (also
    // after the reload of the next test).
    await page.getByRole('button', { name: 'Keep the tasks open' }).click();
    const seen = await progress;
    assert.equal(seen[seen.length - 1], 100);
    assert.ok(
      seen.some(v => v > 0 && v < 100),
      `progress moved through partial values: ${seen}`
    );
    for (const title of [
      'Count the lines',
      'List the files',
      'Write the summary'
    ]) {
      await page.waitForSelector(
        `li.jp-ThinkTask[aria-label="Task ${title}"][data-status="complete"]`,
        { timeout: TIMEOUT }
      );
    }
    assert.equal(
      await page
        .locator('.jp-ThinkTask .jp-ThinkSubagentBadge[data-status="complete"]')
        .count(),
      2
    );
    // No flooding: the subagents' words stay in their drill-ins.
    const chat = await mainText(page);
    assert.match(chat, /Done: notes\.md has 3 lines/);
    assert.doesNotMatch(chat, /Counting the lines of notes\.md/);
    assert.doesNotMatch(chat, /Listing the workspace files now/);
    await shot(page, 'tasks-complete', page.locator('.jp-ThinkChat'));
  });

  test('after a reload the tree and the open drill-in come back from the store', async () => {
    await page
      .getByRole('button', { name: 'Open the subagent of List the files' })
      .click();
    await drillIn(page, 'List the files').waitFor();
    await page.reload();
    await page.waitForSelector('#jp-main-dock-panel', { timeout: TIMEOUT });
    await openChat(page);
    // The drill-in that was open opens again, from the subagent's stored messages.
    const view = drillIn(page, 'List the files');
    await view.waitFor({ timeout: TIMEOUT });
    await view
      .locator('.jp-ThinkMessage')
      .filter({ hasText: 'The workspace holds notes.md and analysis.ipynb.' })
      .waitFor({ timeout: TIMEOUT });
    await view
      .locator('.jp-ThinkToolCard[data-status="complete"]')
      .waitFor({ timeout: TIMEOUT });
    assert.match(await view.textContent(), /Listing the workspace files now/);
    assert.equal(await view.getAttribute('data-status'), 'complete');
    await shot(page, 'tasks-drill-in-reloaded', page.locator('.jp-ThinkChat'));
    // The tree came back whole, at 100%.
    assert.equal(
      await page
        .locator('[role="progressbar"][aria-label="Overall progress"]')
        .getAttribute('aria-valuenow'),
      '100'
    );
    assert.equal(
      await page.locator('li.jp-ThinkTask[data-status="complete"]').count(),
      4
    );
    // The other subagent's history loads on click; back to the chat.
    await page
      .getByRole('button', { name: 'Open the subagent of Count the lines' })
      .click();
    await drillIn(page, 'Count the lines')
      .locator('.jp-ThinkMessage')
      .filter({ hasText: 'notes.md has 3 lines.' })
      .waitFor({ timeout: TIMEOUT });
    // The dark theme, for the screenshot: only JupyterLab's colour variables are used.
    await theme(page, 'JupyterLab Dark');
    await shot(page, 'tasks-dark', page.locator('.jp-ThinkChat'));
    await theme(page, 'JupyterLab Light');
    await page.getByRole('button', { name: 'Back to the chat' }).click();
    const chat = await mainText(page);
    assert.match(chat, /Summarise the workspace for me/);
    assert.doesNotMatch(chat, /The workspace holds notes\.md and analysis/);
  });
});
