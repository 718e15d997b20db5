/**
 * Long sessions in a real JupyterLab: the compaction marker, an image dropped on
 * the composer reaching the model, usage per message and per session.
 *
 * The lab runs with THINK_CONTEXT_WINDOW=2600, so a few messages fill the window and the
 * think kernel compacts the session with the summarizer role (the scripted model answers).
 */

/* global atob, DataTransfer, File, DragEvent */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { launchLab, shot } from './harness.mjs';

const TIMEOUT = 60000;
// A 1x1 red PNG.
const PNG_B64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

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

/** Wait until the model answered once more and the chat is idle again. */
async function waitIdle(p, before) {
  const deadline = Date.now() + TIMEOUT;
  while ((await lab.modelStats()).requests.length <= before) {
    if (Date.now() > deadline) {
      throw new Error('the model was never asked');
    }
    await new Promise(r => setTimeout(r, 100));
  }
  await p.waitForFunction(
    () =>
      document
        .querySelector('.jp-ThinkChat-body')
        ?.getAttribute('data-running') === 'false' &&
      document.querySelector('.jp-ThinkStatus')?.getAttribute('data-status') ===
        'idle' &&
      !document.querySelector('.jp-ThinkMessage[data-status="streaming"]'),
    null,
    { timeout: TIMEOUT }
  );
}

const asked = async () => (await lab.modelStats()).requests.length;

async function send(p, text) {
  await lab.script('hello');
  await p.fill('.jp-ThinkComposer-input', text);
  await p.keyboard.press('Enter');
}

describe('Long sessions in the Think sidebar', () => {
  before(async () => {
    ui = await launchLab({
      env: { THINK_CONTEXT_WINDOW: '2600' },
      sidebar: true
    });
    ({ lab, page } = ui);
    await newSession(page);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('a full window is compacted: a marker that expands to the summary and the messages', async () => {
    const filler = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
    for (let i = 1; i <= 5; i++) {
      const before = await asked();
      await send(page, `request ${i}: ${filler}`);
      await waitIdle(page, before);
    }
    const marker = page.locator('.jp-ThinkCompaction');
    await marker.waitFor({ timeout: TIMEOUT });
    const label = await marker
      .locator('.jp-ThinkCompaction-label')
      .textContent();
    assert.match(label, /Compacted \d+ messages?/);
    // The first request stays in view; the compacted ones are folded behind the marker.
    const users = page.locator('.jp-ThinkMessage.jp-mod-user');
    assert.match(await users.first().textContent(), /request 1:/);
    const shownBefore = await users.count();
    assert.ok(shownBefore < 5, `${shownBefore} user messages still shown`);
    await marker.locator('.jp-ThinkCompaction-header').click();
    const summary = await marker
      .locator('.jp-ThinkCompaction-summary')
      .textContent();
    assert.match(summary, /fake compaction answer/);
    await page.waitForFunction(
      () =>
        document.querySelectorAll('.jp-ThinkMessage.jp-mod-user').length === 5
    );
    await shot(
      page,
      'long-01-compaction-marker',
      page.locator('.jp-ThinkChat')
    );
    // The model was sent the summary and the first request, not every message.
    const { requests } = await lab.modelStats();
    const last = requests[requests.length - 1].messages;
    assert.match(last[0].content, /fake compaction answer/);
    assert.match(last[1].content, /^request 1:/);
    assert.ok(last.length < 10, `${last.length} messages sent`);
    // The session badge shows the totals.
    const badge = await page.locator('.jp-ThinkUsage').textContent();
    assert.match(badge, /tokens/);
  });

  test('an image dropped on the composer reaches the model as an image part', async () => {
    await page.evaluate(b64 => {
      const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], 'red.png', { type: 'image/png' }));
      const target = document.querySelector('.jp-ThinkComposer-input');
      target.dispatchEvent(
        new DragEvent('drop', {
          dataTransfer: dt,
          bubbles: true,
          cancelable: true
        })
      );
    }, PNG_B64);
    await page.waitForSelector(
      '.jp-ThinkComposer .jp-ThinkAttachment[data-kind="image"]:has-text("red.png")'
    );
    const before = await asked();
    await send(page, 'what colour is this pixel?');
    await waitIdle(page, before);
    const { requests } = await lab.modelStats();
    assert.equal(requests.length, before + 1);
    const content = requests[before].messages.at(-1).content;
    assert.ok(Array.isArray(content), 'the request has content parts');
    assert.match(content[0].text, /what colour is this pixel\?/);
    assert.equal(content[1].image_url.url, `data:image/png;base64,${PNG_B64}`);
    // The message shows its attachment; the reply names the role and model that answered.
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-user .jp-ThinkAttachment:has-text("red.png")'
    );
    const footer = page.locator('.jp-ThinkMessage-usage').last();
    assert.equal(await footer.getAttribute('data-role'), 'vision');
    assert.match(
      await footer.textContent(),
      /vision · fake-model · .* in · .* out/
    );
    await shot(page, 'long-02-image-attachment', page.locator('.jp-ThinkChat'));
  });
});
