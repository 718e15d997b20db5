/**
 * Inline completion in a notebook: typing in a cell shows the scripted model's completion
 * as ghost text, Tab accepts it into the cell, the model was sent the cells above, and
 * typing 60 characters at about 10 a second sends only a few completion requests.
 */

import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { launchLab, notebookText, openFile, shot } from './harness.mjs';

const COMPLETION = 'math.pi * radius ** 2';
/** The provider's least quiet time between a key and a request (src/inlineCompletion.ts). */
const MIN_QUIET_MS = 250;

let ui;
let page;
let lab;
/** The text before the cursor of every browser request to the completion route. */
const sent = [];

async function completions() {
  const { internal_requests: asked } = await lab.modelStats();
  return asked.filter(r => r._purpose === 'complete');
}

/** Focus the editor of the notebook's `n`th cell, at its end. */
async function focusCell(n) {
  const editor = page.locator('.jp-Notebook .jp-Cell .cm-content').nth(n);
  await editor.click();
  await page.keyboard.press('Control+End');
  return editor;
}

describe('inline completion', () => {
  before(async () => {
    ui = await launchLab({
      files: {
        'shapes.py': 'import math\n\n',
        'circle.ipynb': notebookText(
          ['import math\nradius = 2', '', ''],
          'python3'
        )
      },
      notebook: 'circle.ipynb',
      beforePage: ({ context }) =>
        context.on('request', r => {
          if (r.url().includes('/api/think/complete')) {
            sent.push(JSON.parse(r.postData()).prefix);
          }
        })
    });
    ({ page, lab } = ui);
    await lab.answer('complete', { text: COMPLETION });
  });

  afterEach(async t => {
    await lab?.reportFailure(t);
  });

  after(async () => {
    await ui?.close();
  });

  test('ghost text from the model, accepted with Tab', async () => {
    const editor = await focusCell(1);
    await page.keyboard.type('area = ', { delay: 60 });
    const ghost = page.locator('.jp-Notebook .jp-GhostText');
    await ghost.waitFor({ timeout: 20000 });
    assert.equal(await ghost.innerText(), COMPLETION);
    await shot(page, 'inline-completion-ghost');
    await page.keyboard.press('Tab');
    await page.waitForFunction(
      ([text]) =>
        [...document.querySelectorAll('.jp-Notebook .jp-Cell .cm-content')]
          .map(e => e.textContent)
          .includes(text),
      [`area = ${COMPLETION}`]
    );
    assert.equal(await editor.textContent(), `area = ${COMPLETION}`);
    assert.equal(await ghost.count(), 0);
    // The model was asked with the cell above and the text before the cursor (a request
    // from an earlier pause in the typing may have gone before).
    const prompt = (await completions()).at(-1).messages.at(-1).content;
    assert.match(prompt, /import math\nradius = 2/);
    assert.match(prompt, /area = <CURSOR>/);
    await shot(page, 'inline-completion-accepted');
  });

  test('60 characters typed at 10 a second send a few requests', async () => {
    await page.keyboard.press('Escape');
    await focusCell(2);
    // The time of each key as the page saw it: a loaded machine can stall the typing, and
    // a stall longer than the debounce is a pause that rightly asks.
    await page.evaluate(() => {
      window.thinkKeys = [];
      document.addEventListener(
        'keydown',
        () => window.thinkKeys.push(performance.now()),
        true
      );
    });
    const typed =
      'total = sum(x * x for x in range(10)) + radius * 3 - 1  # ok';
    assert.equal(typed.length, 60);
    await page.keyboard.type(typed, { delay: 100 });
    // The last key's request comes after the debounce: wait for its ghost text.
    await page
      .locator('.jp-Notebook .jp-GhostText')
      .waitFor({ timeout: 20000 });
    // Only this cell's requests: accepting the completion above changed that cell's text,
    // which may ask once more while this test starts.
    const ours = prefix => prefix.length > 0 && typed.startsWith(prefix);
    const browser = sent.filter(ours).length;
    const model = (await completions()).filter(r =>
      ours(r.messages.at(-1).content.split(':\n').at(-1).split('<CURSOR>')[0])
    ).length;
    const keys = await page.evaluate(() => window.thinkKeys);
    const gaps = keys.slice(1).map((t, i) => t - keys[i]);
    const pauses = gaps.filter(g => g >= MIN_QUIET_MS).length;
    console.log(
      `60 characters typed: ${browser} completion requests from the browser, ` +
        `${model} to the model; ${pauses} pauses of ${MIN_QUIET_MS} ms or more ` +
        `between keys (longest ${Math.round(Math.max(...gaps))} ms)`
    );
    assert.equal(keys.length, 60);
    assert.ok(browser >= 1, 'no request after the typing stopped');
    assert.ok(
      browser <= 1 + pauses,
      `${browser} requests for ${pauses} pauses: a request while typing`
    );
    assert.ok(model >= 1 && model <= browser, `${model} requests to the model`);
    await page.keyboard.press('Escape');
  });

  test('in a file editor too', async () => {
    await page.keyboard.press('Escape');
    const { page: filePage, editor } = await openFile(
      ui.context,
      lab,
      'shapes.py'
    );
    await editor.click();
    await filePage.keyboard.press('Control+End');
    await filePage.keyboard.type('side = ', { delay: 60 });
    const ghost = filePage.locator('.jp-FileEditor .jp-GhostText');
    await ghost.waitFor({ timeout: 20000 });
    assert.equal(await ghost.innerText(), COMPLETION);
    await filePage.keyboard.press('Tab');
    await filePage.waitForFunction(
      ([text]) =>
        document
          .querySelector('.jp-FileEditor .cm-content')
          .textContent.includes(text),
      [`side = ${COMPLETION}`]
    );
    const prompt = (await completions()).at(-1).messages.at(-1).content;
    assert.match(prompt, /The file shapes\.py/);
    assert.match(prompt, /import math\n\nside = <CURSOR>/);
    await filePage.close();
  });
});

describe('inline completion without a model', () => {
  let bare;
  const asked = { complete: 0, model: 0 };

  before(async () => {
    bare = await launchLab({
      configured: false,
      files: { 'plain.ipynb': notebookText(['import math', ''], 'python3') },
      notebook: 'plain.ipynb',
      beforePage: ({ context }) =>
        context.on('request', r => {
          if (r.url().includes('/api/think/complete')) {
            asked.complete++;
          }
          if (new URL(r.url()).pathname.endsWith('/api/think/model')) {
            asked.model++;
          }
        })
    });
  });

  afterEach(async t => {
    await bare?.lab.reportFailure(t);
  });

  after(async () => {
    await bare?.close();
  });

  test('typing sends nothing to the model and shows nothing', async () => {
    const { page: p } = bare;
    const editor = p.locator('.jp-Notebook .jp-Cell .cm-content').nth(1);
    // The provider asks the server once whether a model is set up, after the debounce
    // (the page asked too as it loaded: only requests from now on count).
    const since = Date.now();
    const baseline = asked.model;
    const checked = p.waitForResponse(
      r =>
        new URL(r.url()).pathname.endsWith('/api/think/model') &&
        r.request().timing().startTime >= since
    );
    await editor.click();
    await p.keyboard.type('value = ', { delay: 60 });
    const answer = await (await checked).json();
    assert.equal(answer.configured, false);
    // Asked for at once (no debounce), and typed on: still nothing is sent.
    await p.keyboard.press('Alt+\\');
    await p.keyboard.type('math.', { delay: 60 });
    await p.keyboard.press('Alt+\\');
    await p.evaluate(() => new Promise(r => requestAnimationFrame(r)));
    assert.equal(asked.complete, 0, 'a completion request without a model');
    assert.equal(asked.model - baseline, 1, 'one model-state check');
    assert.equal(await p.locator('.jp-GhostText').count(), 0);
    const { internal_requests: reached } = await bare.lab.modelStats();
    assert.equal(reached.length, 0);
  });
});
