/**
 * Browser tests: the sidebar works from the keyboard alone (send, stop, approve, reject) and
 * axe-core finds no serious or critical violation in it with a chat, an approval and tasks.
 */

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';

import { launchLab } from './harness.mjs';

const TIMEOUT = 60000;
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

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

/** Type a message and send it with Enter, from the keyboard only. */
async function typeAndSend(p, replies, text) {
  await lab.scriptReplies(replies);
  await p.locator('.jp-ThinkComposer-input').focus();
  await p.keyboard.type(text);
  await p.keyboard.press('Enter');
}

async function waitIdle(p) {
  await p.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
    timeout: TIMEOUT
  });
}

/** The accessible name of the focused element. */
function focused(p) {
  return p.evaluate(() => {
    const el = document.activeElement;
    return (
      el?.getAttribute('aria-label') ||
      el?.textContent?.trim() ||
      el?.tagName ||
      ''
    );
  });
}

/** Press Tab until the focused control is called `name`; the names passed on the way. */
async function tabTo(p, name, max = 15) {
  const seen = [];
  for (let i = 0; i < max; i++) {
    await p.keyboard.press('Tab');
    const now = await focused(p);
    seen.push(now);
    if (now === name) {
      return seen;
    }
  }
  throw new Error(`Tab never reached "${name}"; it went: ${seen.join(' | ')}`);
}

/** The serious and critical axe-core violations in the sidebar. */
async function axeViolations(p) {
  if (!(await p.evaluate(() => 'axe' in window))) {
    await p.addScriptTag({ path: AXE });
  }
  const violations = await p.evaluate(async () => {
    const r = await window.axe.run(document.querySelector('.jp-ThinkChat'), {
      resultTypes: ['violations']
    });
    return r.violations.map(v => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 3).map(n => n.html.slice(0, 160))
    }));
  });
  return violations.filter(
    v => v.impact === 'serious' || v.impact === 'critical'
  );
}

/** axe-core on the sidebar: no serious or critical violation. */
async function axe(p, state) {
  const bad = await axeViolations(p);
  assert.deepEqual(bad, [], `${state}: ${JSON.stringify(bad, null, 1)}`);
}

describe('The sidebar from the keyboard, and axe-core', () => {
  before(async () => {
    ui = await launchLab({ sidebar: true });
    ({ lab, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('send with Enter, stop with Tab and Enter; a chat passes axe', async () => {
    await newSession(page);
    const words = Array.from({ length: 400 }, (_, i) => ` w${i}`);
    await typeAndSend(page, [{ tokens: words, delay: 0.03 }], 'stream please');
    await page.waitForSelector('.jp-ThinkMessage[data-status="streaming"]', {
      timeout: TIMEOUT
    });
    await page.locator('.jp-ThinkComposer-input').focus();
    await tabTo(page, 'Stop');
    await page.keyboard.press('Enter');
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-assistant[data-status="cancelled"]',
      { timeout: TIMEOUT }
    );
    await waitIdle(page);
    await typeAndSend(
      page,
      [
        {
          text: 'Listing.',
          tool_calls: [['bash', { command: 'ls' }]]
        },
        { text: 'Two files.' }
      ],
      'list the files'
    );
    await page.waitForSelector('.jp-ThinkToolCard[data-status="complete"]', {
      timeout: TIMEOUT
    });
    await waitIdle(page);
    await axe(page, 'chat');
    // The check can fail: an icon button without a name is caught.
    await page.evaluate(() => {
      const b = document.createElement('button');
      b.id = 'nameless';
      document.querySelector('.jp-ThinkChat').append(b);
    });
    const caught = await axeViolations(page);
    await page.evaluate(() => document.getElementById('nameless').remove());
    assert.ok(caught.some(v => v.id === 'button-name'));
  });

  test('approve with Tab and Space, reject with Enter; an approval passes axe', async () => {
    await newSession(page);
    fs.writeFileSync(path.join(lab.root, 'one.txt'), '1\n');
    fs.writeFileSync(path.join(lab.root, 'two.txt'), '2\n');
    await typeAndSend(
      page,
      [
        { tool_calls: [['delete_file', { path: 'one.txt' }]] },
        { tool_calls: [['delete_file', { path: 'two.txt' }]] },
        { text: 'Deleted one.txt, kept two.txt.' }
      ],
      'delete both files'
    );
    const pending = page.locator('.jp-ThinkApproval[data-status="pending"]');
    await pending.waitFor({ timeout: TIMEOUT });
    await axe(page, 'approval');
    // From the reason box, Tab goes to Approve first.
    await pending.getByRole('textbox', { name: 'Reason' }).focus();
    await tabTo(page, 'Approve', 1);
    await page.keyboard.press('Space');
    await page.waitForFunction(
      () =>
        document
          .querySelector(
            '.jp-ThinkApproval[data-status="pending"] .jp-ThinkApproval-title'
          )
          ?.textContent?.includes('two.txt'),
      null,
      { timeout: TIMEOUT }
    );
    await pending.getByRole('textbox', { name: 'Reason' }).focus();
    await page.keyboard.type('keep it');
    await tabTo(page, 'Reject', 2);
    await page.keyboard.press('Enter');
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-assistant:has-text("kept two.txt")',
      { timeout: TIMEOUT }
    );
    await waitIdle(page);
    assert.equal(fs.existsSync(path.join(lab.root, 'one.txt')), false);
    assert.equal(fs.existsSync(path.join(lab.root, 'two.txt')), true);
  });

  test('tasks pass axe', async () => {
    await newSession(page);
    await typeAndSend(
      page,
      [
        {
          text: 'Planning.',
          tool_calls: [
            [
              'create_subtask',
              { title: 'Read the notes', type: 'explore', name: 'read' }
            ]
          ]
        },
        { text: 'Planned.' }
      ],
      'plan it'
    );
    await page
      .getByRole('region', { name: 'Tasks' })
      .waitFor({ timeout: TIMEOUT });
    await waitIdle(page);
    await axe(page, 'tasks');
  });
});
