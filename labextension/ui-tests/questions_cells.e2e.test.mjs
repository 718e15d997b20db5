/**
 * Browser test of a question (`ask_user`) answered in a Think notebook's cell widget while
 * a second tab watches the notebook's session in its sidebar: both surfaces update, the
 * answer names the person the server authenticated, and a reload of the watcher shows the
 * answered question folded on its `ask_user` call. Real JupyterLab, think kernel, store and
 * ipywidgets; only the model is scripted (see harness.mjs).
 */

import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import {
  kernelIdle,
  launchLab,
  notebookText,
  openChat,
  openNotebook,
  shot
} from './harness.mjs';

const TIMEOUT = 90000;

let ui;
let lab;

/** The display name jupyter_server gives the person of this page (its login cookie). */
async function me(page) {
  const body = await page.evaluate(() =>
    fetch('/api/me', { credentials: 'same-origin' }).then(r => r.json())
  );
  return body.identity.display_name;
}

/** The Think session of notebook `path`, once its kernel made one. */
async function sessionOf(path) {
  const deadline = Date.now() + TIMEOUT;
  for (;;) {
    const { sessions } = await lab.api('GET', 'sessions');
    // The kernel names its notebook by the path the server gave it (absolute here).
    const found = sessions.find(
      s => s.kind === 'notebook' && `/${s.path}`.endsWith(`/${path}`)
    );
    if (found) {
      return found.id;
    }
    if (Date.now() > deadline) {
      throw new Error(`no session for ${path}: ${JSON.stringify(sessions)}`);
    }
    await new Promise(r => setTimeout(r, 200));
  }
}

describe('Questions answered in a cell', () => {
  before(async () => {
    ui = await launchLab({
      page: false,
      files: { 'ask.ipynb': notebookText(['paint it']) }
    });
    ({ lab } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test("the cell's widget answers; a second tab's sidebar updates", async () => {
    await lab.scriptReplies([
      {
        text: 'Let me ask.',
        tool_calls: [
          [
            'ask_user',
            { question: 'Which colour?', options: ['red', 'green', 'blue'] }
          ]
        ]
      },
      { text: 'Painting it green.' }
    ]);
    const page = await openNotebook(ui.context, lab, 'ask.ipynb');
    const name = await me(page);
    await kernelIdle(page);
    const cell = page.locator('.jp-NotebookPanel .jp-CodeCell').first();
    await cell.locator('.cm-content').click();
    await page.keyboard.press('Shift+Enter');
    const green = cell.locator('.jp-OutputArea button', { hasText: 'green' });
    await green.waitFor({ timeout: TIMEOUT });
    // The watcher: the notebook's session in the sidebar of another tab.
    const sid = await sessionOf('ask.ipynb');
    const watcher = await ui.context.newPage();
    await watcher.goto(`${lab.url}/lab?token=${lab.token}&reset`);
    await openChat(watcher);
    await watcher.locator('.jp-ThinkSessions-select').selectOption(sid);
    const pending = watcher.locator('.jp-ThinkQuestion.jp-mod-pending');
    await pending.waitFor({ timeout: TIMEOUT });
    assert.match(await pending.innerText(), /Which colour\?/);
    await green.click();
    // The cell's card names the person who clicked, and the run goes on.
    const said = new RegExp(`Answered by ${name} via notebook: green`);
    await cell
      .locator('.jp-OutputArea', { hasText: said })
      .waitFor({ timeout: TIMEOUT });
    await cell
      .locator('.jp-OutputArea', { hasText: 'Painting it green.' })
      .waitFor({ timeout: TIMEOUT });
    // The watcher's card left, and the transcript shows the answer where it was asked.
    const line = watcher.locator(
      '.jp-ThinkQuestionLine[data-status="answered"]'
    );
    await line.waitFor({ timeout: TIMEOUT });
    assert.match(await line.innerText(), said);
    assert.equal(await pending.count(), 0);
    const row = await lab.api(
      'GET',
      `sessions/${sid}/questions/${await line.getAttribute('data-question-id')}`
    );
    assert.equal(row.user, name);
    assert.equal(row.source, 'notebook');
    await shot(
      watcher,
      'question-answered-in-cell',
      watcher.locator('.jp-ThinkChat-body')
    );
    await shot(page, 'question-cell-answered', cell);
    // After a reload the answered question is still there, folded on its call.
    await watcher.reload();
    await openChat(watcher);
    await watcher.locator('.jp-ThinkSessions-select').selectOption(sid);
    await line.waitFor({ timeout: TIMEOUT });
    assert.match(await line.innerText(), said);
    assert.equal(await pending.count(), 0);
    await watcher.close();
    await page.close();
  });
});
