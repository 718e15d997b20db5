/**
 * Browser tests of the approval cards against a real JupyterLab, real think
 * kernels and the real store; only the model is scripted (see harness.mjs).
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium).
 */

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';

import { SCRIPTS, launchLab, openChat, shot } from './harness.mjs';

const TIMEOUT = 60000;

Object.assign(SCRIPTS, {
  approveWrite: [
    {
      text: 'I will write the file.',
      tool_calls: [['write_file', { path: 'hello.txt', content: 'hello\n' }]]
    },
    { text: 'Wrote hello.txt.' }
  ],
  rejectDelete: [
    {
      text: 'I will delete the notes.',
      tool_calls: [['bash', { command: 'rm notes.md' }]]
    },
    { text: 'Understood, I kept notes.md.' }
  ],
  autoWrite: [
    {
      text: 'Writing.',
      tool_calls: [['write_file', { path: 'auto.txt', content: 'auto\n' }]]
    },
    { text: 'Wrote auto.txt without asking.' }
  ],
  afterReload: [
    {
      text: 'Counting.',
      tool_calls: [['bash', { command: 'echo ran >> count.txt' }]]
    },
    { text: 'Counted once.' }
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

async function ask(p, kind, text) {
  await lab.script(kind);
  await p.fill('.jp-ThinkComposer-input', text);
  await p.keyboard.press('Enter');
}

async function waitIdle(p) {
  await p.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
    timeout: TIMEOUT
  });
}

function read(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

async function until(cond, what, timeout = TIMEOUT) {
  const end = Date.now() + timeout;
  while (!cond()) {
    if (Date.now() > end) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise(r => setTimeout(r, 100));
  }
}

const pending = p => p.locator('.jp-ThinkApproval[data-status="pending"]');

describe('Approvals in the sidebar', () => {
  before(async () => {
    ui = await launchLab({
      // Kernels start on the first message: they read this (ask before every write).
      kernelConfig: 'c.ThinkConfig.approval_policy = "strict"\n',
      sidebar: true
    });
    ({ lab, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('approve: the card shows the diff, the call runs', async () => {
    await newSession(page);
    await ask(page, 'approveWrite', 'write hello.txt');
    const card = pending(page);
    await card.waitFor({ timeout: TIMEOUT });
    assert.match(
      await card
        .locator('.jp-ThinkDiff-add')
        .allTextContents()
        .then(t => t.join('\n')),
      /\+hello/
    );
    assert.equal(fs.existsSync(path.join(lab.root, 'hello.txt')), false);
    await shot(page, 'approval-pending', card);
    await card.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.waitForSelector(
      '.jp-ThinkApprovalLine[data-status="approved"]',
      {
        timeout: TIMEOUT
      }
    );
    await waitIdle(page);
    await page.waitForFunction(
      () =>
        [...document.querySelectorAll('.jp-ThinkMessage.jp-mod-assistant')]
          .map(m => m.textContent)
          .join(' ')
          .includes('Wrote hello.txt.'),
      null,
      { timeout: TIMEOUT }
    );
    // The write goes through the file's collaboration room, saved to disk shortly after.
    await until(
      () => read(path.join(lab.root, 'hello.txt')) === 'hello\n',
      'hello.txt saved'
    );
    const decided = await page
      .locator(
        '.jp-ThinkApprovalLine[data-status="approved"] .jp-ThinkApprovalLine-text'
      )
      .textContent();
    assert.match(decided, /Approved .*via sidebar/);
  });

  test('reject: the reason reaches the model, nothing runs', async () => {
    await newSession(page);
    await ask(page, 'rejectDelete', 'delete my notes');
    const card = pending(page);
    await card.waitFor({ timeout: TIMEOUT });
    await card.getByLabel('Reason').fill('those notes are mine');
    await card.getByRole('button', { name: 'Reject' }).click();
    await page.waitForSelector(
      '.jp-ThinkApprovalLine[data-status="rejected"]',
      {
        timeout: TIMEOUT
      }
    );
    await waitIdle(page);
    assert.equal(fs.existsSync(path.join(lab.root, 'notes.md')), true);
    const stats = await lab.modelStats();
    const last = stats.requests[stats.requests.length - 1].messages;
    const tool = last.filter(m => m.role === 'tool').pop();
    assert.match(tool.content, /those notes are mine/);
    await shot(page, 'approval-rejected', page.locator('.jp-ThinkChat'));
  });

  test('a pending approval survives a page reload', async () => {
    await newSession(page);
    await ask(page, 'afterReload', 'count');
    await pending(page).waitFor({ timeout: TIMEOUT });
    const before = (await lab.modelStats()).requests.length;
    await page.reload();
    await page.waitForSelector('#jp-main-dock-panel');
    await openChat(page);
    const card = pending(page);
    await card.waitFor({ timeout: TIMEOUT });
    await card.getByRole('button', { name: 'Approve', exact: true }).click();
    await waitIdle(page);
    await page.waitForSelector(
      '.jp-ThinkApprovalLine[data-status="approved"]',
      {
        timeout: TIMEOUT
      }
    );
    await page.waitForFunction(
      () =>
        [...document.querySelectorAll('.jp-ThinkMessage.jp-mod-assistant')]
          .map(m => m.textContent)
          .join(' ')
          .includes('Counted once.'),
      null,
      { timeout: TIMEOUT }
    );
    assert.equal(
      fs.readFileSync(path.join(lab.root, 'count.txt'), 'utf8'),
      'ran\n'
    );
    assert.equal((await lab.modelStats()).requests.length, before + 1);
  });

  test('the sidebar sets the session policy: auto runs without asking', async () => {
    await newSession(page);
    const picker = page.getByLabel('Approval mode');
    await picker.selectOption('auto');
    const id = await page.locator('.jp-ThinkSessions-select').inputValue();
    const stored = async () =>
      (await lab.api('GET', `sessions/${id}`)).options?.approval?.mode;
    for (let i = 0; i < 50 && (await stored()) !== 'auto'; i++) {
      await new Promise(r => setTimeout(r, 100));
    }
    assert.equal(await stored(), 'auto');
    await ask(page, 'autoWrite', 'write auto.txt');
    await waitIdle(page);
    await until(
      () => read(path.join(lab.root, 'auto.txt')) === 'auto\n',
      'auto.txt saved'
    );
    assert.equal(await pending(page).count(), 0);
    await shot(page, 'approval-policy', page.locator('.jp-ThinkApprovals'));
  });
});
