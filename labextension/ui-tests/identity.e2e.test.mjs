/**
 * Browser tests of who a decision names: the person a browser is (jupyter_server's
 * identity, shown as JupyterLab's avatar initials) stays the same across server restarts,
 * on the same port and on another one; another browser is another person; a click on a
 * cell's approval buttons is stamped with the clicking person. Real JupyterLab, real think
 * kernels, the real store; only the model is scripted (see harness.mjs).
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium).
 */

import assert from 'node:assert/strict';
import net from 'node:net';
import { afterEach, describe, test } from 'node:test';

import {
  launchBrowser,
  launchLab,
  notebookText,
  openChat,
  openLab,
  shot
} from './harness.mjs';

const TIMEOUT = 60000;
const WRITE = name => [
  {
    text: `I will write ${name}.`,
    tool_calls: [['write_file', { path: name, content: 'hello\n' }]]
  },
  { text: `Wrote ${name}.` }
];
const STRICT = 'c.ThinkConfig.approval_policy = "strict"\n';

let ui = null;

afterEach(async t => {
  await ui?.lab.reportFailure(t);
  await ui?.close();
  ui = null;
});

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/** The person this page's browser is, as the server says (`GET /api/me`, its cookies). */
async function me(page) {
  return page.evaluate(async () => {
    const r = await fetch('/api/me');
    return (await r.json()).identity;
  });
}

/** The initials of JupyterLab's avatar of the person (the user menu in the top bar). */
async function avatar(page) {
  const icon = page
    .locator('#jp-top-panel .jp-MenuBar-anonymousIcon span')
    .first();
  await icon.waitFor({ timeout: TIMEOUT });
  return (await icon.textContent()).trim();
}

/** The text of each decided approval line: who decided ("you" or a display name), where. */
async function decidedLines(page) {
  return page
    .locator('.jp-ThinkApprovalLine .jp-ThinkApprovalLine-text')
    .allTextContents();
}

/**
 * Wait until the decided lines read `expected` (a tab names its own decisions "you" once it
 * knows who it is), then assert it, so a failure shows what the lines said.
 */
async function linesAre(page, expected) {
  await page
    .waitForFunction(
      want =>
        JSON.stringify(
          [
            ...document.querySelectorAll(
              '.jp-ThinkApprovalLine .jp-ThinkApprovalLine-text'
            )
          ].map(e => e.textContent)
        ) === JSON.stringify(want),
      expected,
      { timeout: 15000 }
    )
    .catch(() => {}); // the assertion below reports what the lines said
  assert.deepEqual(await decidedLines(page), expected);
}

async function showSession(page, sid, count) {
  await openChat(page);
  await page.locator('.jp-ThinkSessions-select').selectOption(sid);
  await page.waitForFunction(
    n => document.querySelectorAll('.jp-ThinkApprovalLine').length >= n,
    count,
    { timeout: TIMEOUT }
  );
}

async function approveInSidebar(page, lab, name) {
  await lab.scriptReplies(WRITE(name));
  await page.fill('.jp-ThinkComposer-input', `write ${name}`);
  await page.keyboard.press('Enter');
  const card = page.locator('.jp-ThinkApproval[data-status="pending"]');
  await card.waitFor({ timeout: TIMEOUT });
  await card.getByRole('button', { name: 'Approve', exact: true }).click();
  await page.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
    timeout: TIMEOUT
  });
}

/** The decisions of the action log (`GET .../actions`), oldest first. */
async function decisions(lab, sid) {
  const { actions } = await lab.api('GET', `sessions/${sid}/actions`);
  return actions.map(a => a.action).filter(a => /^(approved|rejected)/.test(a));
}

describe('Who decided', () => {
  test('a browser is the same person after restarts, another browser is not', async () => {
    ui = await launchLab({ kernelConfig: STRICT, sidebar: true });
    const { lab } = ui;
    let { page } = ui;
    const person = await me(page);
    assert.match(person.display_name, /^Anonymous /);
    assert.equal(await avatar(page), person.initials);
    await page.getByRole('button', { name: 'New session' }).click();
    await page.waitForSelector('.jp-ThinkStatus[data-status="idle"]');
    await approveInSidebar(page, lab, 'one.txt');
    const sid = await page.locator('.jp-ThinkSessions-select').inputValue();
    await linesAre(page, ['Approved by you via sidebar']);

    // Restarted on the same port: the tab reloads with its cookies.
    await lab.restart();
    await page.reload();
    await page.waitForSelector('#jp-main-dock-panel', { timeout: TIMEOUT });
    await showSession(page, sid, 1);
    assert.deepEqual(await me(page), person);
    assert.equal(await avatar(page), person.initials);
    await linesAre(page, ['Approved by you via sidebar']);

    // Restarted on another port (the first one taken, as `jupyter lab` then moves on):
    // the same browser opens the new address with the token.
    await lab.restart({ port: await freePort() });
    await page.close();
    page = await openLab(ui.context, lab);
    await showSession(page, sid, 1);
    assert.deepEqual(await me(page), person);
    assert.equal(await avatar(page), person.initials);
    await approveInSidebar(page, lab, 'two.txt');
    await linesAre(page, [
      'Approved by you via sidebar',
      'Approved by you via sidebar'
    ]);
    await shot(page, 'identity-after-restart', page.locator('.jp-ThinkChat'));

    // The action log names the person both times, as Jupyter shows them.
    const name = person.display_name;
    assert.deepEqual(await decisions(lab, sid), [
      `approved by ${name} via sidebar`,
      `approved by ${name} via sidebar`
    ]);

    // Another browser (no cookies of the first) is another person, and sees the name.
    const other = await launchBrowser();
    try {
      const context = await other.newContext({
        viewport: { width: 1400, height: 900 }
      });
      const theirs = await openLab(context, lab);
      const them = await me(theirs);
      assert.notEqual(them.username, person.username);
      await showSession(theirs, sid, 2);
      await linesAre(theirs, [
        `Approved by ${name} via sidebar`,
        `Approved by ${name} via sidebar`
      ]);
    } finally {
      await other.close();
    }
  });

  test("a click on a cell's Approve names the person who clicked", async () => {
    ui = await launchLab({
      kernelConfig: STRICT,
      files: { 'cells.ipynb': notebookText(['write cell.txt'], 'think') },
      notebook: 'cells.ipynb'
    });
    const { lab, page } = ui;
    const person = await me(page);
    assert.match(person.display_name, /^Anonymous /); // a name, not the hex user id
    await lab.scriptReplies(WRITE('cell.txt'));
    // Run the cell once its kernel is up, from its editor, as a person would.
    await page.getByText('Think | Idle').waitFor({ timeout: TIMEOUT });
    const cell = page.locator('.jp-NotebookPanel .jp-CodeCell').first();
    await cell.locator('.cm-content').click();
    await page.keyboard.press('Shift+Enter');
    const approve = page
      .locator('.jp-OutputArea-output .widget-button')
      .filter({ hasText: /^Approve$/ });
    await approve.waitFor({ timeout: TIMEOUT });
    await approve.click();
    await cell
      .locator('.jp-OutputArea-output')
      .filter({ hasText: 'Wrote cell.txt.' })
      .waitFor({ timeout: TIMEOUT });
    assert.match(
      await cell.innerText(),
      new RegExp(`Approved by ${person.display_name} via notebook`)
    );

    // The action log: the person's Jupyter display name, not an id, not the OS user.
    const { sessions } = await lab.api('GET', 'sessions');
    const notebook = sessions.filter(s => s.kind === 'notebook');
    assert.equal(notebook.length, 1, JSON.stringify(sessions));
    const sid = notebook[0].id;
    assert.deepEqual(await decisions(lab, sid), [
      `approved by ${person.display_name} via notebook`
    ]);

    // The sidebar of the same browser (reloaded: its list then has the notebook's
    // session) says "you"; another browser's names the person.
    await page.reload();
    await page.waitForSelector('#jp-main-dock-panel', { timeout: TIMEOUT });
    await showSession(page, sid, 1);
    await linesAre(page, ['Approved by you via notebook']);
    await shot(page, 'identity-cell-approval', page.locator('.jp-ThinkChat'));
    const other = await launchBrowser();
    try {
      const theirs = await openLab(await other.newContext(), lab);
      await showSession(theirs, sid, 1);
      await linesAre(theirs, [
        `Approved by ${person.display_name} via notebook`
      ]);
    } finally {
      await other.close();
    }
  });
});
