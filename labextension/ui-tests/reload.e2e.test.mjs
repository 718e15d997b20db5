/**
 * Browser tests: a reloaded tab shows what the run is doing, whatever that is (streaming
 * text, running a tool with live output, waiting for an approval, a request queued behind
 * it, a retry counting down), and then follows it live. Real JupyterLab, kernels and
 * store; only the model is scripted (see harness.mjs).
 *
 * Each state is also saved as a screenshot at the default sidebar width and at 280 px.
 */

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';

import { launchLab, openChat, shot } from './harness.mjs';

const TIMEOUT = 60000;
// A retry waits long enough for a reload to land inside it (the default is 2 s).
const RETRY_S = 20;

let ui;
let lab;
let page;

const chat = p => p.locator('.jp-ThinkChat');
const badge = p => p.locator('.jp-ThinkStatus');
const toolCard = p => p.locator('.jp-ThinkToolCard').last();

async function newSession(p) {
  const known = (await lab.api('GET', 'sessions')).sessions.map(s => s.id);
  await p.getByRole('button', { name: 'New session' }).click();
  await p.waitForFunction(known => {
    const el = document.querySelector('.jp-ThinkSessions-select');
    return el && el.value && !known.includes(el.value);
  }, known);
  await p.waitForSelector('.jp-ThinkStatus[data-status="idle"]');
}

async function ask(p, replies, text) {
  await lab.scriptReplies(replies);
  await p.fill('.jp-ThinkComposer-input', text);
  await p.keyboard.press('Enter');
}

async function reloadChat(p) {
  await p.reload();
  await p.waitForSelector('#jp-main-dock-panel', { timeout: TIMEOUT });
  await openChat(p);
}

async function waitIdle(p) {
  await p.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
    timeout: TIMEOUT
  });
}

async function waitStatus(p, status) {
  await p.waitForSelector(`.jp-ThinkStatus[data-status="${status}"]`, {
    timeout: TIMEOUT
  });
}

/** Drag the splitter left of the right sidebar until the sidebar is `width` px wide. */
async function sidebarWidth(p, width) {
  const stack = p.locator('#jp-right-stack');
  for (let i = 0; i < 3; i++) {
    const box = await stack.boundingBox();
    if (Math.abs(box.width - width) <= 2) {
      return;
    }
    const y = box.y + box.height / 2;
    await p.mouse.move(box.x - 2, y);
    await p.mouse.down();
    await p.mouse.move(box.x + box.width - width - 2, y, { steps: 5 });
    await p.mouse.up();
  }
  const box = await stack.boundingBox();
  assert.ok(Math.abs(box.width - width) <= 4, `sidebar is ${box.width} px`);
}

/** Screenshots of the chat at the default sidebar width and at 280 px. */
async function shots(p, name) {
  await shot(p, `reload-${name}`, chat(p));
  const wide = (await p.locator('#jp-right-stack').boundingBox()).width;
  await sidebarWidth(p, 280);
  await shot(p, `reload-${name}-280`, chat(p));
  await sidebarWidth(p, wide);
}

describe('A reloaded tab shows what the run is doing', () => {
  before(async () => {
    ui = await launchLab({
      sidebar: true,
      kernelConfig: `c.ThinkConfig.retry_delays = [${RETRY_S}.0]\n`
    });
    ({ lab, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('streaming text: the partial answer, status Thinking, then live', async () => {
    await newSession(page);
    const words = Array.from({ length: 600 }, (_, i) => `${i ? ' ' : ''}w${i}`);
    await ask(page, [{ tokens: words, delay: 0.03 }], 'stream slowly');
    const streaming = page.locator(
      '.jp-ThinkMessage[data-status="streaming"] .jp-ThinkMarkdown'
    );
    await page.waitForFunction(
      () =>
        (
          document.querySelector(
            '.jp-ThinkMessage[data-status="streaming"] .jp-ThinkMarkdown'
          )?.textContent ?? ''
        ).includes('w20'),
      null,
      { timeout: TIMEOUT }
    );
    await reloadChat(page);
    await streaming.waitFor({ timeout: TIMEOUT });
    assert.ok((await streaming.textContent()).includes('w20'));
    // The header says what a tab that never left says, not a generic "Working".
    await waitStatus(page, 'thinking');
    const before = (await streaming.textContent()).length;
    await page.waitForFunction(
      n =>
        (
          document.querySelector(
            '.jp-ThinkMessage[data-status="streaming"] .jp-ThinkMarkdown'
          )?.textContent ?? ''
        ).length > n,
      before,
      { timeout: TIMEOUT }
    );
    await shots(page, 'streaming');
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    await waitIdle(page);
  });

  test('a running tool: running after the reload, output so far, then live; a queued request', async () => {
    await newSession(page);
    // The command prints until the test creates `stop-ticker`, so the reload lands mid-tool.
    const command =
      'i=0; while [ ! -f stop-ticker ]; do echo tick$i; i=$((i+1)); sleep 0.2; done; echo done';
    await ask(
      page,
      [
        { text: 'Ticking.', tool_calls: [['bash', { command }]] },
        { text: 'The ticker stopped.' }
      ],
      'run the ticker'
    );
    await page.waitForSelector('.jp-ThinkToolCard[data-status="running"]', {
      timeout: TIMEOUT
    });
    await page.waitForFunction(
      () =>
        (
          document.querySelector('.jp-ThinkToolCard-tail')?.textContent ?? ''
        ).includes('tick3'),
      null,
      { timeout: TIMEOUT }
    );
    // A second request waits behind the running one.
    await ask(page, [{ text: 'Second answer.' }], 'and then this');
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-user[data-status="queued"]',
      { timeout: TIMEOUT }
    );

    await reloadChat(page);
    const card = page.locator('.jp-ThinkToolCard[data-status="running"]');
    await card.waitFor({ timeout: TIMEOUT });
    await waitStatus(page, 'executing');
    assert.equal(
      await page.locator('.jp-ThinkToolCard[data-status="cancelled"]').count(),
      0,
      'a running tool is not shown stopped'
    );
    // Its output so far is back, and new lines keep coming into the same card.
    const tail = card.locator('.jp-ThinkToolCard-tail');
    await tail.waitFor({ timeout: TIMEOUT });
    const n = Number((await tail.textContent()).match(/tick(\d+)\s*$/)[1]);
    await page.waitForFunction(
      n =>
        (
          document.querySelector(
            '.jp-ThinkToolCard[data-status="running"] .jp-ThinkToolCard-tail'
          )?.textContent ?? ''
        ).includes(`tick${n + 3}`),
      n,
      { timeout: TIMEOUT }
    );
    await page
      .locator('.jp-ThinkMessage.jp-mod-user[data-status="queued"]')
      .waitFor({ timeout: TIMEOUT });
    await shots(page, 'tool-running');

    fs.writeFileSync(path.join(lab.root, 'stop-ticker'), '');
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-assistant:has-text("Second answer.")',
      { timeout: TIMEOUT }
    );
    await waitIdle(page);
    assert.equal(
      await toolCard(page).getAttribute('data-status'),
      'complete',
      'the ticker finished'
    );
  });

  test('waiting for an approval: the card, the status, the waiting tool', async () => {
    await newSession(page);
    fs.writeFileSync(path.join(lab.root, 'old.txt'), 'old\n');
    await ask(
      page,
      [
        {
          text: 'Removing it.',
          tool_calls: [['delete_file', { path: 'old.txt' }]]
        },
        { text: 'Removed.' }
      ],
      'remove old.txt'
    );
    const pending = page.locator('.jp-ThinkApproval[data-status="pending"]');
    await pending.waitFor({ timeout: TIMEOUT });
    await waitStatus(page, 'waiting');

    await reloadChat(page);
    await pending.waitFor({ timeout: TIMEOUT });
    await waitStatus(page, 'waiting');
    assert.match(
      await badge(page).textContent(),
      /approval needed/,
      'the header says what it waits for'
    );
    assert.equal(await toolCard(page).getAttribute('data-status'), 'running');
    await shots(page, 'approval');

    // Approved with edited arguments: what ran is what both cards show, also after a reload.
    fs.writeFileSync(path.join(lab.root, 'other.txt'), 'other\n');
    await pending.getByRole('button', { name: 'Edit', exact: true }).click();
    await pending
      .getByRole('textbox', { name: 'Edited input' })
      .fill('{"path": "other.txt"}');
    await pending.getByRole('button', { name: 'Approve edited' }).click();
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-assistant:has-text("Removed.")',
      { timeout: TIMEOUT }
    );
    await waitIdle(page);
    assert.equal(fs.existsSync(path.join(lab.root, 'other.txt')), false);
    assert.equal(fs.existsSync(path.join(lab.root, 'old.txt')), true);
    for (const when of ['live', 'after a reload']) {
      if (when !== 'live') {
        await reloadChat(page);
      }
      const card = page.locator('.jp-ThinkToolCard[data-status="complete"]');
      await card.waitFor({ timeout: TIMEOUT });
      assert.match(
        await card.locator('.jp-ThinkToolCard-args').textContent(),
        /other\.txt/,
        `the tool card shows the edited path (${when})`
      );
      const line = card.locator('.jp-ThinkApprovalLine');
      await line.waitFor({ timeout: TIMEOUT });
      assert.match(await line.textContent(), /Approved by you via sidebar/);
      await line.getByRole('button').first().click();
      const decided = card.locator('.jp-ThinkApproval');
      assert.match(await decided.textContent(), /other\.txt/, when);
      assert.doesNotMatch(await decided.textContent(), /old\.txt/, when);
    }
    await shots(page, 'approved-edited');
  });

  test('a retry counting down: the countdown goes on after the reload', async () => {
    await newSession(page);
    await ask(
      page,
      [
        { error: 429, error_message: 'Rate limit reached' },
        { text: 'Answered after the retry.' }
      ],
      'answer despite the rate limit'
    );
    await waitStatus(page, 'waiting');
    await reloadChat(page);
    await waitStatus(page, 'waiting');
    const detail = page.locator('.jp-ThinkStatus-detail');
    const left = async () => {
      const m = (await detail.textContent()).match(/retry 1\/1 in (\d+) s/);
      assert.ok(m, `no countdown in "${await detail.textContent()}"`);
      return Number(m[1]);
    };
    const first = await left();
    assert.ok(first < RETRY_S, `the countdown restarted: ${first} s`);
    await page.waitForFunction(
      n => {
        const t =
          document.querySelector('.jp-ThinkStatus-detail')?.textContent ?? '';
        const m = t.match(/in (\d+) s/);
        return m && Number(m[1]) < n;
      },
      first,
      { timeout: TIMEOUT }
    );
    await shots(page, 'retrying');
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-assistant:has-text("Answered after the retry.")',
      { timeout: TIMEOUT }
    );
    await waitIdle(page);
  });
});
