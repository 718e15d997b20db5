/**
 * Browser tests of the chat sidebar against a real JupyterLab (see harness.mjs).
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium).
 */

import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { launchLab, openChat, openLab, shot } from './harness.mjs';

const TIMEOUT = 30000;

let ui;
let lab;
let context;
let page;

const assistant = p => p.locator('.jp-ThinkMessage.jp-mod-assistant');
const users = p => p.locator('.jp-ThinkMessage.jp-mod-user');
const chat = p => p.locator('.jp-ThinkChat');

/** Create a session with the button; resolves once the chat shows it. */
async function newSession(p) {
  // Known ids from the server: right after a reload the picker may still be loading the
  // list and select the last session on its own, which must not count as the new one.
  const known = (await lab.api('GET', 'sessions')).sessions.map(s => s.id);
  await p.getByRole('button', { name: 'New session' }).click();
  await p.waitForFunction(known => {
    const el = document.querySelector('.jp-ThinkSessions-select');
    return el && el.value && !known.includes(el.value);
  }, known);
  await p.waitForSelector('.jp-ThinkStatus[data-status="idle"]');
}

/** Send `text`; the fake model's script is picked from the keyword in it. */
async function send(p, text) {
  const kind =
    ['tool', 'fail', 'slow', 'long'].find(k => text.includes(k)) ?? 'hello';
  await lab.script(kind === 'tool' && text.includes('fail') ? 'fail' : kind);
  await p.fill('.jp-ThinkComposer-input', text);
  // Pressed on the input itself: after a reload, JupyterLab's late layout restore can move
  // the focus to another widget between the fill and a key sent to whatever has the focus.
  await p.locator('.jp-ThinkComposer-input').press('Enter');
}

async function waitIdle(p) {
  await p.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
    timeout: TIMEOUT
  });
  await p.waitForSelector('.jp-ThinkStatus[data-status="idle"]', {
    timeout: TIMEOUT
  });
  await p.waitForFunction(
    () => !document.querySelector('.jp-ThinkMessage[data-status="streaming"]'),
    null,
    { timeout: TIMEOUT }
  );
}

/** Texts the last assistant message showed while streaming, sampled each frame. */
async function sampleStream(p, doneSelector) {
  return p.evaluate(
    ({ doneSelector, timeout }) =>
      new Promise((resolve, reject) => {
        const seen = [];
        const t0 = performance.now();
        const tick = () => {
          const msgs = document.querySelectorAll(
            '.jp-ThinkMessage.jp-mod-assistant'
          );
          const last = msgs[msgs.length - 1];
          const text =
            last?.querySelector('.jp-ThinkMarkdown')?.textContent ?? '';
          if (text && seen[seen.length - 1] !== text) {
            seen.push(text);
          }
          if (document.querySelector(doneSelector)) {
            resolve(seen);
          } else if (performance.now() - t0 > timeout) {
            reject(new Error(`timeout; saw ${seen.length} states`));
          } else {
            requestAnimationFrame(tick);
          }
        };
        tick();
      }),
    { doneSelector, timeout: TIMEOUT }
  );
}

describe('Think chat in JupyterLab', () => {
  before(async () => {
    ui = await launchLab({ sidebar: true });
    ({ lab, context, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('the sidebar, launcher and palette entries exist', async () => {
    assert.equal(await chat(page).isVisible(), true);
    // A Think notebook: the kernel spec's card (one launcher item per action).
    await page.waitForSelector(
      '.jp-LauncherCard[data-category="Notebook"][title="Think"]'
    );
    assert.ok(
      await page.locator('.jp-LauncherCard:has-text("Open Think chat")').count()
    );
    await shot(page, '01-sidebar-empty');
  });

  test('send a message: tokens stream, a tool card runs and completes', async () => {
    await newSession(page);
    const streaming = sampleStream(
      page,
      '.jp-ThinkMessage[data-status="complete"] .jp-ThinkToolCard'
    );
    await send(page, 'please use a tool');
    // The user message shows at once.
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-user:has-text("please use a tool")'
    );
    const running = await page.waitForSelector(
      '.jp-ThinkToolCard[data-status="running"]',
      {
        timeout: TIMEOUT
      }
    );
    assert.ok(running);
    await page.waitForSelector('.jp-ThinkStatus[data-status="executing"]', {
      timeout: TIMEOUT
    });
    await shot(page, '02-tool-running', chat(page));
    await page.waitForSelector('.jp-ThinkToolCard[data-status="complete"]', {
      timeout: TIMEOUT
    });
    await waitIdle(page);
    const seen = await streaming;
    assert.ok(
      seen.length >= 3,
      `expected the text to grow in steps, saw ${JSON.stringify(seen)}`
    );
    const final = await assistant(page).last().textContent();
    assert.match(final, /There are two files/);
    // The card shows duration; expanding it shows arguments and result.
    const card = page.locator('.jp-ThinkToolCard').first();
    assert.match(await card.textContent(), /bash.*ls.*done · [\d.]+ m?s/);
    await card.locator('.jp-ThinkToolCard-header').click();
    await page.waitForSelector(
      '.jp-ThinkToolCard-output:has-text("analysis.ipynb")'
    );
    await shot(page, '03-tool-complete', chat(page));
  });

  test('a failing tool is marked as an error', async () => {
    await newSession(page);
    await send(page, 'this tool will fail');
    await page.waitForSelector('.jp-ThinkToolCard[data-status="error"]', {
      timeout: TIMEOUT
    });
    await waitIdle(page);
    assert.match(
      await page.locator('.jp-ThinkToolCard.jp-mod-error').textContent(),
      /failed/
    );
  });

  test('stop cancels mid-stream', async () => {
    await newSession(page);
    await send(page, 'slow answer please');
    await page.waitForFunction(
      () =>
        (
          document.querySelector(
            '.jp-ThinkMessage[data-status="streaming"] .jp-ThinkMarkdown'
          )?.textContent ?? ''
        ).includes('word5'),
      null,
      { timeout: TIMEOUT }
    );
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-assistant[data-status="cancelled"]',
      {
        timeout: TIMEOUT
      }
    );
    await waitIdle(page);
    const text = await assistant(page)
      .last()
      .locator('.jp-ThinkMarkdown')
      .textContent();
    assert.ok(!text.includes('word399'), 'the stream went on after stop');
    assert.ok(await page.getByRole('button', { name: 'Send' }).isVisible());
    await shot(page, '04-stopped', chat(page));
  });

  test('a message sent during a run is queued, then runs after it', async () => {
    await newSession(page);
    await send(page, 'slow answer please');
    await page.waitForSelector('.jp-ThinkMessage[data-status="streaming"]', {
      timeout: TIMEOUT
    });
    // Enter while the run streams: the message is stored, shown queued, at the bottom.
    await send(page, 'and then say hello');
    const queued = page.locator(
      '.jp-ThinkMessage.jp-mod-user[data-status="queued"]'
    );
    await queued.waitFor({ timeout: TIMEOUT });
    assert.match(
      await queued.textContent(),
      /Queued: runs when the current request ends/
    );
    const lastIsQueued = await page.evaluate(() => {
      const all = document.querySelectorAll('.jp-ThinkMessage');
      return all[all.length - 1].getAttribute('data-status') === 'queued';
    });
    assert.ok(lastIsQueued, 'the queued message is shown last');
    assert.ok(await page.getByRole('button', { name: 'Stop' }).isVisible());
    await shot(page, '04b-queued', chat(page));
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-assistant:has-text("Hello! I am")',
      {
        timeout: TIMEOUT
      }
    );
    await waitIdle(page);
    // One run after the other: the second question comes after the first answer.
    const order = await page.evaluate(() =>
      [...document.querySelectorAll('.jp-ThinkMessage')].map(
        m =>
          `${m.classList.contains('jp-mod-user') ? 'user' : 'assistant'}:${m.getAttribute('data-status')}`
      )
    );
    assert.deepEqual(order, [
      'user:complete',
      'assistant:complete',
      'user:complete',
      'assistant:complete'
    ]);
    const requests = (await lab.modelStats()).requests;
    const last = requests[requests.length - 1].messages;
    assert.match(
      JSON.stringify(last),
      /word399/,
      'the second run saw the whole first answer'
    );
  });

  test('stop and send cancels the run in flight and sends at once', async () => {
    await newSession(page);
    await send(page, 'slow answer please');
    await page.waitForFunction(
      () =>
        (
          document.querySelector(
            '.jp-ThinkMessage[data-status="streaming"] .jp-ThinkMarkdown'
          )?.textContent ?? ''
        ).includes('word5'),
      null,
      { timeout: TIMEOUT }
    );
    await lab.script('hello');
    await page.fill('.jp-ThinkComposer-input', 'forget that, say hello');
    await page.getByRole('button', { name: 'Stop and send' }).click();
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-assistant[data-status="cancelled"]',
      { timeout: TIMEOUT }
    );
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-assistant:has-text("Hello! I am")',
      {
        timeout: TIMEOUT
      }
    );
    await waitIdle(page);
    const stopped = await assistant(page)
      .first()
      .locator('.jp-ThinkMarkdown')
      .textContent();
    assert.ok(
      !stopped.includes('word399'),
      'the first run went on after stop and send'
    );
    assert.equal(await users(page).count(), 2);
    await shot(page, '04c-stop-and-send', chat(page));
  });

  test('reload shows the history of the session', async () => {
    await newSession(page);
    await send(page, 'please use a tool');
    await page.waitForSelector('.jp-ThinkToolCard[data-status="complete"]', {
      timeout: TIMEOUT
    });
    await waitIdle(page);
    const beforeTexts = await page
      .locator('.jp-ThinkMessage')
      .allTextContents();
    await page.reload();
    await page.waitForSelector('#jp-main-dock-panel');
    await openChat(page);
    await page.waitForSelector('.jp-ThinkToolCard[data-status="complete"]', {
      timeout: TIMEOUT
    });
    await page.waitForFunction(
      n => document.querySelectorAll('.jp-ThinkMessage').length === n,
      beforeTexts.length,
      { timeout: TIMEOUT }
    );
    const afterTexts = await page.locator('.jp-ThinkMessage').allTextContents();
    assert.deepEqual(afterTexts, beforeTexts);
    await shot(page, '05-after-reload', chat(page));
  });

  test('reload mid-stream picks the stream up where it is', async () => {
    await newSession(page);
    await send(page, 'slow answer please');
    await page.waitForFunction(
      () =>
        (
          document.querySelector(
            '.jp-ThinkMessage[data-status="streaming"] .jp-ThinkMarkdown'
          )?.textContent ?? ''
        ).includes('word20'),
      null,
      { timeout: TIMEOUT }
    );
    await page.reload();
    await page.waitForSelector('#jp-main-dock-panel');
    await openChat(page);
    // The partial message comes back at once, then keeps streaming to the end.
    await page.waitForSelector('.jp-ThinkMessage[data-status="streaming"]', {
      timeout: TIMEOUT
    });
    const first = await assistant(page)
      .last()
      .locator('.jp-ThinkMarkdown')
      .textContent();
    assert.ok(first.includes('word20'), `partial lost: ${first.slice(0, 80)}`);
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-assistant[data-status="complete"]',
      {
        timeout: TIMEOUT
      }
    );
    const text = await assistant(page)
      .last()
      .locator('.jp-ThinkMarkdown')
      .textContent();
    const words = text.trim().split(/\s+/);
    assert.equal(words.length, 400, 'every token exactly once');
    assert.equal(new Set(words).size, 400);
  });

  test('a second tab sees the same stream', async () => {
    await newSession(page);
    const other = await openLab(context, lab);
    await openChat(other);
    // Both tabs open the last session used in this browser.
    await other.waitForFunction(
      () =>
        document
          .querySelector('.jp-ThinkStatus')
          ?.getAttribute('data-status') === 'idle'
    );
    const seenOther = sampleStream(
      other,
      '.jp-ThinkMessage.jp-mod-assistant[data-status="complete"]'
    );
    await send(page, 'long answer please');
    const seen = await seenOther;
    assert.ok(seen.length >= 3, 'the second tab did not stream');
    await waitIdle(page);
    await waitIdle(other);
    const a = await assistant(page).last().textContent();
    const b = await assistant(other).last().textContent();
    assert.equal(b, a);
    assert.ok(
      await other
        .locator('.jp-ThinkMessage.jp-mod-user:has-text("long answer please")')
        .count()
    );
    await shot(other, '06-second-tab', chat(other));
    await other.close();
  });

  test('edit a previous message truncates and resends; retry resends', async () => {
    await newSession(page);
    await send(page, 'hello there');
    await waitIdle(page);
    await send(page, 'please use a tool');
    await page.waitForSelector('.jp-ThinkToolCard[data-status="complete"]', {
      timeout: TIMEOUT
    });
    await waitIdle(page);
    assert.equal(await users(page).count(), 2);
    const first = users(page).first();
    await first.hover();
    await first
      .getByRole('button', { name: 'Edit and resend this message' })
      .click();
    await page.fill('.jp-ThinkEdit-input', 'slow edited question');
    await shot(page, '07-editing', chat(page));
    await lab.script('slow');
    await page.getByRole('button', { name: 'Save and resend' }).click();
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-user:has-text("slow edited question")'
    );
    await page.getByRole('button', { name: 'Stop' }).click();
    await waitIdle(page);
    assert.equal(await users(page).count(), 1);
    assert.equal(await page.locator('.jp-ThinkToolCard').count(), 0);
    await lab.script('slow');
    await page.getByRole('button', { name: 'Retry the last message' }).click();
    await page.waitForSelector('.jp-ThinkMessage[data-status="streaming"]', {
      timeout: TIMEOUT
    });
    await page.getByRole('button', { name: 'Stop' }).click();
    await waitIdle(page);
    assert.equal(await users(page).count(), 1);
    assert.equal(await assistant(page).count(), 1);
  });

  test('a file path in an answer opens the file', async () => {
    await newSession(page);
    await send(page, 'please use a tool');
    await page.waitForSelector('.jp-ThinkPath[data-think-path="notes.md"]', {
      timeout: TIMEOUT
    });
    await waitIdle(page);
    await page.locator('.jp-ThinkPath[data-think-path="notes.md"]').click();
    await page.waitForSelector(
      '.lm-DockPanel-tabBar .lm-TabBar-tab:has-text("notes.md")',
      {
        timeout: TIMEOUT
      }
    );
  });

  test('the action log lists tool calls and filters by outcome', async () => {
    await newSession(page);
    await send(page, 'please use a tool');
    await page.waitForSelector('.jp-ThinkToolCard[data-status="complete"]', {
      timeout: TIMEOUT
    });
    await waitIdle(page);
    await send(page, 'this tool will fail');
    await page.waitForSelector('.jp-ThinkToolCard[data-status="error"]', {
      timeout: TIMEOUT
    });
    await waitIdle(page);
    await page.getByRole('button', { name: 'Open the action log' }).click();
    const rows = page.locator('.jp-ThinkActionLog-table tbody tr');
    await page.waitForFunction(
      () =>
        document.querySelectorAll('.jp-ThinkActionLog-table tbody tr')
          .length === 2,
      null,
      { timeout: TIMEOUT }
    );
    await page.getByLabel('Filter by outcome').selectOption('failure');
    await page.waitForFunction(
      () =>
        document.querySelectorAll('.jp-ThinkActionLog-table tbody tr')
          .length === 1
    );
    assert.match(await rows.first().textContent(), /bash.*false.*failed/);
    await shot(page, '08-action-log');
  });

  test('sessions can be renamed and deleted', async () => {
    await newSession(page);
    await page.getByRole('button', { name: 'Rename session' }).click();
    await page.fill('.jp-ThinkSessions-rename', 'Renamed chat');
    await page.keyboard.press('Enter');
    await page.waitForSelector(
      '.jp-ThinkSessions-select option:has-text("Renamed chat")',
      {
        state: 'attached'
      }
    );
    const listed = await lab.api('GET', 'sessions');
    assert.ok(listed.sessions.some(s => s.title === 'Renamed chat'));
    await page.getByRole('button', { name: 'Delete session' }).click();
    await page
      .locator('.jp-Dialog')
      .getByRole('button', { name: 'Delete' })
      .click();
    await page.waitForFunction(
      () =>
        ![...document.querySelectorAll('.jp-ThinkSessions-select option')].some(
          o => o.textContent === 'Renamed chat'
        )
    );
    const after = await lab.api('GET', 'sessions');
    assert.ok(!after.sessions.some(s => s.title === 'Renamed chat'));
  });

  test('Shift+Enter adds a line; Enter sends with the active file as context', async () => {
    await newSession(page);
    await page.locator('.jp-DirListing-item:has-text("notes.md")').dblclick();
    await page.waitForSelector(
      '.lm-DockPanel-tabBar .lm-TabBar-tab.jp-mod-current:has-text("notes.md")'
    );
    // Nothing is attached until chosen: the active file is offered, then a chip.
    await page.getByRole('button', { name: 'Attach notes.md' }).click();
    await page.waitForSelector(
      '.jp-ThinkComposer [data-kind="context"]:has-text("notes.md")'
    );
    const input = page.locator('.jp-ThinkComposer-input');
    await input.fill('first line');
    await input.press('Shift+Enter');
    await input.pressSequentially('second line');
    assert.equal(await input.inputValue(), 'first line\nsecond line');
    assert.equal(await users(page).count(), 0);
    await lab.script('hello');
    await input.press('Enter');
    await waitIdle(page);
    assert.equal(await input.inputValue(), '');
    const sid = await page.locator('.jp-ThinkSessions-select').inputValue();
    const { messages } = await lab.api('GET', `sessions/${sid}/messages`);
    const sent = messages.find(m => m.role === 'user');
    assert.equal(sent.content, 'first line\nsecond line');
    // The model saw the attached file with the request; the stored message is as typed.
    const { requests } = await lab.modelStats();
    const last = requests[requests.length - 1].messages.at(-1).content;
    assert.ok(last.startsWith('first line\nsecond line'), last);
    assert.ok(last.includes('notes.md'), last);
  });

  test('the debug events view lists raw frames when the setting is on', async () => {
    const r = await fetch(
      `${lab.url}/lab/api/settings/@think/jupyter-think:chat`,
      {
        method: 'PUT',
        headers: {
          Authorization: `token ${lab.token}`,
          'Content-Type': 'application/json'
        },
        body: JSON.stringify({ raw: '{"debugEvents": true}' })
      }
    );
    assert.ok(r.ok, `settings PUT: ${r.status}`);
    await page.reload();
    await page.waitForSelector('#jp-main-dock-panel');
    await openChat(page);
    await newSession(page);
    await send(page, 'hello');
    await waitIdle(page);
    await page.getByRole('button', { name: 'Show debug events' }).click();
    await page.waitForSelector(
      '.jp-ThinkDebug-row .jp-ThinkDebug-type:text-is("text_delta")'
    );
    await page.waitForSelector(
      '.jp-ThinkDebug-row .jp-ThinkDebug-type:text-is("chat")'
    );
    await page.getByLabel('Filter events by type').fill('status');
    const types = await page.locator('.jp-ThinkDebug-type').allTextContents();
    assert.ok(
      types.length > 0 && types.every(t => t === 'status'),
      types.join()
    );
    await shot(page, '10-debug-events', chat(page));
    await page.getByRole('button', { name: 'Show debug events' }).click();
  });

  test('dark theme', async () => {
    const dark = await openLab(context, lab);
    await dark.goto(`${lab.url}/lab?token=${lab.token}`);
    await dark.waitForSelector('#jp-main-dock-panel');
    await openChat(dark);
    await dark.keyboard.press('Escape');
    await dark.locator('.lm-MenuBar-itemLabel:text-is("Settings")').click();
    await dark.locator('.lm-Menu-itemLabel:text-is("Theme")').hover();
    await dark.locator('.lm-Menu-itemLabel:text-is("JupyterLab Dark")').click();
    await dark.waitForFunction(
      () => document.body.dataset.jpThemeLight === 'false',
      null,
      {
        timeout: TIMEOUT
      }
    );
    await newSession(dark);
    await send(dark, 'please use a tool');
    await dark.waitForSelector('.jp-ThinkToolCard[data-status="complete"]', {
      timeout: TIMEOUT
    });
    await waitIdle(dark);
    await shot(dark, '09-dark-theme');
    await dark.locator('.lm-MenuBar-itemLabel:text-is("Settings")').click();
    await dark.locator('.lm-Menu-itemLabel:text-is("Theme")').hover();
    await dark
      .locator('.lm-Menu-itemLabel:text-is("JupyterLab Light")')
      .click();
    await dark.close();
  });
});
