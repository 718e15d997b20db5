/**
 * First contact, in a real JupyterLab and headless Chromium: a fresh server with
 * no model → the setup card → the scripted endpoint → a first answer; then errors,
 * sessions grouped by kind, and the sidebar's polish (badge, buttons, keys, code blocks).
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium).
 */

/* global localStorage, sessionStorage, navigator -- used in page.evaluate (the browser) */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { after, afterEach, before, describe, test } from 'node:test';

import { launchLab, openChat, openSidebar, repoDir, shot } from './harness.mjs';

const TIMEOUT = 30000;
const KEY = 'sk-e2e-secret-0123456789';

let ui;
let lab;
let page;

const chat = p => p.locator('.jp-ThinkChat');

async function waitIdle(p) {
  await p.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
    timeout: TIMEOUT
  });
  await p.waitForSelector('.jp-ThinkStatus[data-status="idle"]', {
    timeout: TIMEOUT
  });
}

async function send(p, text, script) {
  await lab.script(script);
  await p.fill('.jp-ThinkComposer-input', text);
  await p.keyboard.press('Enter');
}

/** Add sessions of other kinds straight to the server's store (as kernels would). */
function seedSessions() {
  const log = fs.readFileSync(lab.log, 'utf8');
  const store = /Think store: (\S+)/.exec(log)?.[1];
  assert.ok(store, 'the server logged no store path');
  const code = `
import asyncio, sys
from think_kernel.store import Store
async def main():
    s = await Store.open(sys.argv[1])
    nb = await s.create_session(title="Notebook work", path="analysis.ipynb", kind="notebook")
    await s.add_message(nb["id"], "user", "load the data")
    mg = await s.create_session(title="A %%think cell", path="analysis.ipynb", kind="magic")
    await s.add_message(mg["id"], "user", "plot x\\n\\n<context>\\nx = [1, 2, 3]\\ny = 'abc'\\n</context>")
    await s.add_message(mg["id"], "assistant", "Plotted.")
    await s.close()
asyncio.run(main())
`;
  const r = spawnSync('python3', ['-c', code, store], {
    env: { ...process.env, PYTHONPATH: repoDir },
    encoding: 'utf8'
  });
  assert.equal(r.status, 0, r.stderr);
}

describe('First contact: setup card to first answer', () => {
  before(async () => {
    ui = await launchLab({
      configured: false,
      permissions: ['clipboard-read', 'clipboard-write']
    });
    ({ lab, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('a fresh server opens the sidebar on the setup card', async () => {
    const before = await lab.api('GET', 'model');
    assert.equal(before.configured, false);
    await openSidebar(page);
    try {
      await page.waitForSelector('.jp-ThinkSetup', { timeout: TIMEOUT });
    } catch (e) {
      await shot(page, '20-setup-card-missing');
      throw e;
    }
    assert.equal(await page.locator('.jp-ThinkComposer-input').count(), 0);
    for (const label of ['OpenAI', 'Ollama', 'vLLM / LiteLLM / other']) {
      assert.ok(await page.getByRole('tab', { name: label }).isVisible());
    }
    await shot(page, '20-setup-card', chat(page));
  });

  test('test connection lists the models; save applies at once', async () => {
    await page.getByRole('tab', { name: 'vLLM / LiteLLM / other' }).click();
    await page.fill('.jp-ThinkSetup-url', lab.modelUrl);
    await page.fill('.jp-ThinkSetup-key', KEY);
    await page.getByRole('button', { name: 'Test connection' }).click();
    await page.waitForSelector('.jp-ThinkSetup-message.jp-mod-ok', {
      timeout: TIMEOUT
    });
    const options = await page
      .locator('select.jp-ThinkSetup-model option')
      .allTextContents();
    assert.deepEqual(options, ['fake-model', 'fake-model-large']);
    await page.selectOption('select.jp-ThinkSetup-model', 'fake-model');
    await shot(page, '21-setup-tested', chat(page));
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForSelector('.jp-ThinkComposer-input', { timeout: TIMEOUT });
    // The header shows the model and its role; the key is nowhere in the browser.
    const badge = page.locator('.jp-ThinkModelBadge');
    assert.match(await badge.textContent(), /fake-model\s*primary/);
    const stored = await page.evaluate(() =>
      JSON.stringify({ ...localStorage, ...sessionStorage })
    );
    assert.ok(!stored.includes(KEY), 'the key is in browser storage');
    const ep = await lab.api('GET', 'model');
    assert.equal(ep.configured, true);
    assert.equal(ep.source, 'saved');
    assert.ok(!JSON.stringify(ep).includes(KEY));
  });

  test('the first message gets an answer', async () => {
    await send(page, 'hello', 'hello');
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-assistant:has-text("Hello! I am")',
      { timeout: 90000 }
    );
    await waitIdle(page);
    const { requests } = await lab.modelStats();
    assert.equal(requests.at(-1).model, 'fake-model');
    await shot(page, '22-first-answer', chat(page));
  });

  test('an endpoint error reads well, after its message, inside the panel', async () => {
    await lab.api('POST', 'sessions', { title: 'errors' }); // not selected: no effect
    await send(page, 'this will fail', 'unauthorized');
    const note = page.locator('.jp-ThinkMessages .jp-ThinkError');
    await note.waitFor({ timeout: TIMEOUT });
    await waitIdle(page);
    // Markdown, not raw asterisks; the fix in this surface, not "restart the kernel".
    assert.ok(await note.locator('.jp-RenderedMarkdown strong').count());
    const text = await note.textContent();
    assert.ok(!text.includes('**'), text);
    assert.ok(!/restart the kernel/i.test(text), text);
    assert.match(text, /Set up a model/);
    // After the user message it belongs to.
    const order = await page.evaluate(() =>
      [
        ...document.querySelectorAll(
          '.jp-ThinkMessages .jp-ThinkMessage.jp-mod-user, .jp-ThinkMessages .jp-ThinkError'
        )
      ].map(e =>
        e.classList.contains('jp-ThinkError') ? 'error' : e.textContent
      )
    );
    const at = order.findIndex(
      t => t !== 'error' && t.includes('this will fail')
    );
    assert.ok(at >= 0 && order.indexOf('error', at) > at, order.join(' | '));
    // It wraps: nothing runs off the panel's edge.
    const overflow = await page.evaluate(() => {
      const list = document.querySelector('.jp-ThinkMessages');
      const err = document.querySelector('.jp-ThinkMessages .jp-ThinkError');
      return {
        list: list.scrollWidth - list.clientWidth,
        err:
          err.getBoundingClientRect().right - list.getBoundingClientRect().right
      };
    });
    assert.ok(
      overflow.list <= 1 && overflow.err <= 1,
      JSON.stringify(overflow)
    );
    await shot(page, '23-error-after-message', chat(page));
    // Its button opens the setup card, which can be closed again.
    await note.getByRole('button', { name: 'Set up a model' }).click();
    await page.waitForSelector('.jp-ThinkSetup');
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.waitForSelector('.jp-ThinkComposer-input');
  });

  test('a new chat shows Starting while its kernel starts; labelled retry and edit', async () => {
    await page.getByRole('button', { name: 'New session' }).click();
    await page.waitForSelector('.jp-ThinkStatus[data-status="idle"]');
    await lab.script('hello');
    await page.fill('.jp-ThinkComposer-input', 'hello in a new chat');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.jp-ThinkStatus[data-status="starting"]', {
      timeout: TIMEOUT
    });
    await waitIdle(page);
    const retry = page.getByRole('button', { name: 'Retry the last message' });
    assert.equal((await retry.textContent()).trim(), 'Retry');
    const user = page.locator('.jp-ThinkMessage.jp-mod-user').last();
    await user.hover();
    const edit = user.getByRole('button', {
      name: 'Edit and resend this message'
    });
    assert.equal((await edit.textContent()).trim(), 'Edit');
    await shot(page, '24-retry-edit', chat(page));
  });

  test('keys: Up edits the last message, Escape stops', async () => {
    const input = page.locator('.jp-ThinkComposer-input');
    await input.click();
    await input.press('ArrowUp');
    const editor = page.locator('.jp-ThinkEdit-input');
    await editor.waitFor();
    assert.equal(await editor.inputValue(), 'hello in a new chat');
    await editor.press('Escape');
    await send(page, 'slow answer please', 'slow');
    await page.waitForSelector('.jp-ThinkMessage[data-status="streaming"]', {
      timeout: TIMEOUT
    });
    await input.press('Escape');
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-assistant[data-status="cancelled"]',
      { timeout: TIMEOUT }
    );
    await waitIdle(page);
  });

  test('code blocks have Copy and Insert below', async () => {
    await page
      .locator('.jp-DirListing-item:has-text("analysis.ipynb")')
      .dblclick();
    // A notebook without kernel metadata asks for one: take the default.
    try {
      await page.locator('.jp-Dialog .jp-mod-accept').click({ timeout: 5000 });
    } catch {
      // no dialog
    }
    await page.waitForSelector('.jp-Notebook .jp-Cell', { timeout: TIMEOUT });
    await send(page, 'long code answer', 'long');
    const insert = page.locator('.jp-ThinkCode-insert').last();
    try {
      await insert.waitFor({ timeout: TIMEOUT });
    } catch (e) {
      await shot(page, '25-code-actions-missing');
      throw e;
    }
    await waitIdle(page);
    await page.locator('.jp-ThinkCode-copy').last().click();
    await page.waitForSelector('.jp-ThinkCode-copy:has-text("Copied")');
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    assert.equal(copied, "print('hello')");
    const before = await page.locator('.jp-Notebook .jp-Cell').count();
    await insert.click();
    await page.waitForFunction(
      n => document.querySelectorAll('.jp-Notebook .jp-Cell').length === n + 1,
      before
    );
    const sources = await page
      .locator('.jp-Notebook .jp-Cell .jp-InputArea-editor')
      .allTextContents();
    assert.ok(
      sources.some(s => s.includes("print('hello')")),
      sources.join('|')
    );
    await shot(page, '25-code-actions', chat(page));
  });

  test('one launcher item per action', async () => {
    // The launcher opened at start (maybe behind the notebook): read its sections.
    await page.waitForSelector('.jp-LauncherCard', {
      state: 'attached',
      timeout: TIMEOUT
    });
    const sections = await page.evaluate(() =>
      [...document.querySelectorAll('.jp-Launcher')][0]
        ? [
            ...document
              .querySelectorAll('.jp-Launcher')[0]
              .querySelectorAll('.jp-Launcher-section')
          ].map(s => [
            s.querySelector('.jp-Launcher-sectionTitle')?.textContent ?? '',
            [...s.querySelectorAll('.jp-LauncherCard')]
              .map(
                c =>
                  c.querySelector('.jp-LauncherCard-label')?.textContent ?? ''
              )
              .filter(t => /think/i.test(t))
          ])
        : []
    );
    const cards = Object.fromEntries(sections);
    // Notebook: the kernel spec's card; Other: the chat. No second "Think notebook".
    assert.deepEqual(cards.Notebook, ['Think'], JSON.stringify(sections));
    assert.deepEqual(
      cards.Other,
      ['Open Think chat'],
      JSON.stringify(sections)
    );
  });

  test('sessions are grouped by kind; the sidebar reopens the last chat', async () => {
    const chatId = await page.locator('.jp-ThinkSessions-select').inputValue();
    seedSessions(); // a notebook's and a %%think session, newer than every chat
    await page.reload();
    await page.waitForSelector('#jp-main-dock-panel');
    await openChat(page);
    await page.waitForFunction(
      id => document.querySelector('.jp-ThinkSessions-select')?.value === id,
      chatId,
      { timeout: TIMEOUT }
    );
    const groups = await page
      .locator('.jp-ThinkSessions-select optgroup')
      .evaluateAll(gs => gs.map(g => g.label));
    assert.deepEqual(groups, [
      'Chats',
      'Think notebooks',
      '%%think in notebooks'
    ]);
    const magic = page.locator(
      '.jp-ThinkSessions-select option:has-text("A %%think cell")'
    );
    assert.match(await magic.textContent(), /analysis\.ipynb/);
    await page.selectOption(
      '.jp-ThinkSessions-select',
      await magic.getAttribute('value')
    );
    // The context is a chip, not raw <context> text; it expands.
    const chip = page.locator('.jp-ThinkContext-chip');
    await chip.waitFor({ timeout: TIMEOUT });
    const userText = await page
      .locator('.jp-ThinkMessage.jp-mod-user')
      .first()
      .textContent();
    assert.ok(!userText.includes('<context>'), userText);
    await chip.click();
    await page.waitForSelector(
      '.jp-ThinkContext-body:has-text("x = [1, 2, 3]")'
    );
    // The sidebar does not send into a %%think session: it says where it belongs.
    assert.equal(await page.locator('.jp-ThinkComposer-input').count(), 0);
    assert.match(
      await page.locator('.jp-ThinkForeign').textContent(),
      /%%think.*analysis\.ipynb/
    );
    await shot(page, '26-magic-session', chat(page));
  });
});
