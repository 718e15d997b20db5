/**
 * Time travel from the sidebar, against a real JupyterLab, server, kernels and rooms (only
 * the model is scripted): "Restore files" with the notebook open while a person types in it,
 * "Restore conversation" (also during a run), and the "‹ 1 / 2 ›" versions of an edited
 * message, which switch the conversation between its branches, and the files if asked; a
 * second tab on the session follows the switch.
 */

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterEach, describe, test } from 'node:test';

import { launchLab, openChat, openLab, shot } from './harness.mjs';

const TIMEOUT = 60000;
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let ui;

const chat = p => p.locator('.jp-ThinkChat');
const users = p => p.locator('.jp-ThinkMessage.jp-mod-user');
const userTexts = p =>
  p
    .locator('.jp-ThinkMessage.jp-mod-user .jp-ThinkMessage-userText')
    .allInnerTexts();
const userMessage = (p, text) =>
  p.locator('.jp-ThinkMessage.jp-mod-user', { hasText: text });

/** A notebook of two code cells with known ids, on the python3 kernel. */
function analysisNotebook() {
  const cell = (id, source) => ({
    cell_type: 'code',
    execution_count: null,
    id,
    metadata: {},
    outputs: [],
    source
  });
  return JSON.stringify({
    cells: [cell('agent', 'x = 1'), cell('person', 'y = 2')],
    metadata: {
      kernelspec: { name: 'python3', display_name: 'Python 3' }
    },
    nbformat: 4,
    nbformat_minor: 5
  });
}

async function newSession(p, lab) {
  const known = (await lab.api('GET', 'sessions')).sessions.map(s => s.id);
  await p.getByRole('button', { name: 'New session' }).click();
  await p.waitForFunction(known => {
    const el = document.querySelector('.jp-ThinkSessions-select');
    return el && el.value && !known.includes(el.value);
  }, known);
  await p.waitForSelector('.jp-ThinkStatus[data-status="idle"]');
  return p.locator('.jp-ThinkSessions-select').inputValue();
}

async function waitIdle(p) {
  await p.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
    timeout: TIMEOUT
  });
  await p.waitForFunction(
    () => !document.querySelector('.jp-ThinkMessage[data-status="streaming"]'),
    null,
    { timeout: TIMEOUT }
  );
}

/** Send `text` from the composer and wait until the answer `done` ends the run. */
async function turn(p, text, done) {
  await p.fill('.jp-ThinkComposer-input', text);
  await p.keyboard.press('Enter');
  await p
    .locator('.jp-ThinkMessage.jp-mod-assistant', { hasText: done })
    .waitFor({ timeout: TIMEOUT });
  await waitIdle(p);
}

/** Open the rewind choices of the user message showing `text` and pick one. */
async function rewind(p, text, label, shotName) {
  const m = userMessage(p, text);
  await m.hover();
  await m
    .getByRole('button', { name: 'Rewind to before this message' })
    .click();
  if (shotName) {
    await shot(p, shotName, chat(p));
  }
  await m.getByRole('button', { name: label }).click();
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
      nodes: v.nodes.slice(0, 3).map(n => n.html.slice(0, 160))
    }));
  });
  return violations.filter(
    v => v.impact === 'serious' || v.impact === 'critical'
  );
}

async function waitCells(p, want) {
  await p.waitForFunction(
    want => {
      const got = [
        ...document.querySelectorAll('.jp-NotebookPanel .jp-Cell')
      ].map(c =>
        [...c.querySelectorAll('.cm-content .cm-line')]
          .map(l => l.textContent)
          .join('\n')
      );
      return JSON.stringify(got) === JSON.stringify(want);
    },
    want,
    { timeout: TIMEOUT }
  );
}

async function waitDisk(file, want) {
  const deadline = Date.now() + TIMEOUT;
  for (;;) {
    const got = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
    if (got === want) {
      return;
    }
    if (Date.now() > deadline) {
      assert.equal(got, want, `${path.basename(file)} on disk`);
    }
    await new Promise(r => setTimeout(r, 50)); // polling the disk: no event to wait on
  }
}

/** Drag the sidebar's edge until the chat is `width` pixels wide. */
async function setSidebarWidth(p, width) {
  const panel = await chat(p).boundingBox();
  const handle = await p.evaluate(left => {
    const handles = [...document.querySelectorAll('.lm-SplitPanel-handle')]
      .map(h => h.getBoundingClientRect())
      .filter(r => r.width > 0 && r.height > 200);
    handles.sort((a, b) => Math.abs(a.right - left) - Math.abs(b.right - left));
    const r = handles[0];
    return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
  }, panel.x);
  await p.mouse.move(handle.x, handle.y);
  await p.mouse.down();
  await p.mouse.move(handle.x + (panel.width - width), handle.y, { steps: 5 });
  await p.mouse.up();
  await p.waitForFunction(
    w =>
      Math.abs(
        document.querySelector('.jp-ThinkChat').getBoundingClientRect().width -
          w
      ) <= 2,
    width,
    { timeout: 5000 }
  );
}

/** Nothing in the chat scrolls wider than it is. */
function overflowing(p) {
  return p.evaluate(() =>
    [...document.querySelectorAll('.jp-ThinkChat *')]
      .filter(el => el.scrollWidth > el.clientWidth + 1)
      .filter(el => window.getComputedStyle(el).overflowX !== 'hidden')
      .filter(el => !el.closest('pre, code, .cm-editor, .jp-ThinkToolCard'))
      .map(el => el.className)
  );
}

describe('time travel in the sidebar', () => {
  afterEach(async t => {
    await ui?.lab.reportFailure(t);
    await ui?.close();
    ui = undefined;
  });

  test('"Restore files" before turn 2 keeps what the person typed', async () => {
    ui = await launchLab({
      files: {
        'analysis.ipynb': analysisNotebook(),
        'helper.py': 'a = 1\nb = 2\n'
      },
      notebook: 'analysis.ipynb',
      sidebar: true
    });
    const { lab, page } = ui;
    await waitCells(page, ['x = 1', 'y = 2']);
    await newSession(page, lab);

    // Turn 1: the agent reads the notebook (never helper.py) and edits its cell.
    await lab.scriptReplies([
      {
        tool_calls: [['read_notebook', { path: 'analysis.ipynb' }]]
      },
      {
        tool_calls: [
          [
            'edit_cell',
            { path: 'analysis.ipynb', cell_id: 'agent', source: 'x = 10' }
          ]
        ]
      },
      { text: 'turn one done' }
    ]);
    await turn(page, 'one', 'turn one done');
    await waitCells(page, ['x = 10', 'y = 2']);

    // Turn 2: its cell again, `sed -i` on the .py file in the sandbox, a new file.
    await lab.scriptReplies([
      {
        tool_calls: [
          [
            'edit_cell',
            { path: 'analysis.ipynb', cell_id: 'agent', source: 'x = 100' }
          ]
        ]
      },
      {
        tool_calls: [['bash', { command: "sed -i 's/a = 1/a = 5/' helper.py" }]]
      },
      {
        tool_calls: [['write_file', { path: 'made.txt', content: 'new\n' }]]
      },
      { text: 'turn two done' }
    ]);
    await turn(page, 'two', 'turn two done');
    await waitDisk(path.join(lab.root, 'helper.py'), 'a = 5\nb = 2\n');

    // Turn 3 adds a cell while the person types at the end of their own cell.
    await lab.scriptReplies([
      {
        tool_calls: [
          [
            'insert_cell',
            { path: 'analysis.ipynb', index: -1, source: 'z = 3' }
          ]
        ]
      },
      { text: 'turn three done' }
    ]);
    await page.fill('.jp-ThinkComposer-input', 'three');
    await page.keyboard.press('Enter');
    const mine = page.locator('.jp-NotebookPanel .jp-Cell').nth(1);
    await mine.locator('.cm-content').click();
    await page.keyboard.press('End');
    await page.keyboard.type('  # mine', { delay: 30 });
    await page
      .locator('.jp-ThinkMessage.jp-mod-assistant', {
        hasText: 'turn three done'
      })
      .waitFor({ timeout: TIMEOUT });
    await waitIdle(page);
    await waitCells(page, ['x = 100', 'y = 2  # mine', 'z = 3']);
    assert.ok(fs.existsSync(path.join(lab.root, 'made.txt')));

    await rewind(page, 'two', 'Restore files', 'rewind-choices');
    const note = page.locator('.jp-ThinkRewindNote');
    await note
      .getByText('restored analysis.ipynb, helper.py')
      .waitFor({ timeout: TIMEOUT });
    assert.match(await note.innerText(), /removed made\.txt/);
    // The agent's cell as after turn 1, its new cell gone, every typed character kept.
    await waitCells(page, ['x = 10', 'y = 2  # mine']);
    await waitDisk(path.join(lab.root, 'helper.py'), 'a = 1\nb = 2\n');
    await waitDisk(path.join(lab.root, 'made.txt'), null);
    // A files-only rewind leaves the conversation as it was.
    assert.deepEqual(await userTexts(page), ['one', 'two', 'three']);
    assert.equal(await page.locator('.jp-ThinkRewind-choices').count(), 0);
    await shot(page, 'rewind-files');
    await setSidebarWidth(page, 280);
    await shot(page, 'rewind-files-280px', chat(page));
    assert.deepEqual(await overflowing(page), []);
    // Saved: the person's typing and the restored cells reach the file.
    await page.keyboard.press('Control+s');
    await page.waitForFunction(
      () => !document.querySelector('.jp-NotebookPanel .jp-mod-dirty'),
      null,
      { timeout: TIMEOUT }
    );
    const nb = JSON.parse(
      fs.readFileSync(path.join(lab.root, 'analysis.ipynb'), 'utf8')
    );
    const src = c => (Array.isArray(c.source) ? c.source.join('') : c.source);
    assert.deepEqual(nb.cells.map(src), ['x = 10', 'y = 2  # mine']);
  });

  test("a person's overlapping change stands and the note names it", async () => {
    ui = await launchLab({
      files: { 'plan.txt': 'alpha\nbeta\ngamma\n' },
      page: false
    });
    const { lab, context } = ui;
    const page = await context.newPage();
    await page.goto(`${lab.url}/lab/tree/plan.txt?token=${lab.token}&reset`);
    const editor = page.locator('.jp-FileEditor .cm-content').first();
    await editor.getByText('beta').waitFor({ timeout: TIMEOUT });
    await openChat(page);
    await newSession(page, lab);
    await lab.scriptReplies([
      { tool_calls: [['read_file', { path: 'plan.txt' }]] },
      {
        tool_calls: [
          [
            'edit_file',
            { path: 'plan.txt', old_string: 'beta', new_string: 'BETA' }
          ]
        ]
      },
      { text: 'edited' }
    ]);
    await turn(page, 'shout beta', 'edited');
    await editor.getByText('BETA').waitFor({ timeout: TIMEOUT });
    // The person changes the very line the agent changed, with the keyboard.
    await editor.getByText('BETA').click();
    await page.keyboard.press('End');
    await page.keyboard.type('!', { delay: 30 });
    await editor.getByText('BETA!').waitFor({ timeout: TIMEOUT });

    await rewind(page, 'shout beta', 'Restore both');
    const note = page.locator('.jp-ThinkRewindNote.jp-mod-conflicts');
    await note.waitFor({ timeout: TIMEOUT });
    assert.match(await note.innerText(), /Kept as people changed them since/);
    assert.deepEqual(
      await note.locator('.jp-ThinkRewindNote-conflicts li').allInnerTexts(),
      ['plan.txt, line 2']
    );
    assert.doesNotMatch(await note.innerText(), /restored/);
    // The person's text stands, in the tab; the message's text is back in the composer.
    await editor.getByText('BETA!').waitFor();
    assert.equal(
      await page.locator('.jp-ThinkComposer-input').inputValue(),
      'shout beta'
    );
    assert.equal(await users(page).count(), 0);
    await shot(page, 'rewind-conflict', chat(page));
  });

  test('versions of an edited message switch branches; "Restore conversation" refills the composer', async () => {
    ui = await launchLab({ sidebar: true });
    const { lab, page } = ui;
    await newSession(page, lab);
    await lab.scriptReplies([{ text: 'answer one' }]);
    await turn(page, 'first question', 'answer one');
    await lab.scriptReplies([{ text: 'answer two' }]);
    await turn(page, 'second question', 'answer two');

    // Edit and resend the second message: a new branch, the old one kept.
    const second = userMessage(page, 'second question');
    await second.hover();
    await second
      .getByRole('button', { name: 'Edit and resend this message' })
      .click();
    await page.fill('.jp-ThinkEdit-input', 'second edited');
    await lab.scriptReplies([{ text: 'answer three' }]);
    await page.getByRole('button', { name: 'Save and resend' }).click();
    await page
      .locator('.jp-ThinkMessage.jp-mod-assistant', { hasText: 'answer three' })
      .waitFor({ timeout: TIMEOUT });
    await waitIdle(page);
    const edited = userMessage(page, 'second edited');
    const versions = edited.getByRole('group', {
      name: 'Version 2 of 2 of this message'
    });
    await versions.waitFor({ timeout: TIMEOUT });
    assert.equal(
      await edited.locator('.jp-ThinkBranches-count').innerText(),
      '2 / 2'
    );
    assert.equal(
      await userMessage(page, 'first question')
        .locator('.jp-ThinkBranches')
        .count(),
      0
    );
    await shot(page, 'rewind-versions', chat(page));
    // A second tab on the same session, which follows what the first one switches to.
    const other = await openLab(ui.context, lab);
    await openChat(other);
    await other
      .locator('.jp-ThinkSessions-select')
      .selectOption(
        await page.locator('.jp-ThinkSessions-select').inputValue()
      );
    await other
      .locator('.jp-ThinkMessage.jp-mod-assistant', { hasText: 'answer three' })
      .waitFor({ timeout: TIMEOUT });
    // From the keyboard: Enter opens the choices on the first, Escape closes them and
    // gives the focus back; the versions and the choices pass axe.
    const opener = edited.getByRole('button', {
      name: 'Rewind to before this message'
    });
    await opener.focus();
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      () => document.activeElement?.textContent === 'Restore files',
      null,
      { timeout: TIMEOUT }
    );
    assert.deepEqual(await axeViolations(page), []);
    await page.keyboard.press('Escape');
    await page.waitForFunction(
      () =>
        document.activeElement?.getAttribute('aria-label') ===
        'Rewind to before this message',
      null,
      { timeout: TIMEOUT }
    );
    assert.equal(await page.locator('.jp-ThinkRewind-choices').count(), 0);

    // The previous version: the old branch's messages come back.
    await edited
      .getByRole('button', {
        name: 'Show the previous version of this message'
      })
      .click();
    await edited
      .getByRole('button', { name: 'Switch conversation', exact: true })
      .click();
    await page
      .locator('.jp-ThinkMessage.jp-mod-assistant', { hasText: 'answer two' })
      .waitFor({ timeout: TIMEOUT });
    const old = userMessage(page, 'second question');
    await old
      .getByRole('group', { name: 'Version 1 of 2 of this message' })
      .waitFor({ timeout: TIMEOUT });
    assert.deepEqual(await userTexts(page), [
      'first question',
      'second question'
    ]);
    assert.equal(await page.getByText('answer three').count(), 0);
    await other
      .locator('.jp-ThinkMessage.jp-mod-assistant', { hasText: 'answer two' })
      .waitFor({ timeout: TIMEOUT });
    assert.equal(await other.getByText('answer three').count(), 0);
    await other.close();
    // The server's current branch is the one shown: the model sees it next.
    const sid = await page.locator('.jp-ThinkSessions-select').inputValue();
    const { messages } = await lab.api('GET', `sessions/${sid}/messages`);
    assert.deepEqual(
      messages.filter(m => m.role === 'user').map(m => m.content),
      ['first question', 'second question']
    );
    // And back, with the keyboard: Enter asks, the focus is on "Switch conversation".
    await old
      .getByRole('button', { name: 'Show the next version of this message' })
      .press('Enter');
    await page.waitForFunction(
      () => document.activeElement?.textContent === 'Switch conversation',
      null,
      { timeout: TIMEOUT }
    );
    await page.keyboard.press('Enter');
    await page
      .locator('.jp-ThinkMessage.jp-mod-assistant', { hasText: 'answer three' })
      .waitFor({ timeout: TIMEOUT });
    assert.equal(await page.getByText('answer two').count(), 0);

    // "Restore conversation" on the edited message: back to before it, its text in the
    // composer to edit or resend.
    await rewind(page, 'second edited', 'Restore conversation');
    await page.waitForFunction(
      () =>
        document.querySelector('.jp-ThinkComposer-input')?.value ===
        'second edited',
      null,
      { timeout: TIMEOUT }
    );
    await page.waitForFunction(
      () =>
        document.querySelectorAll('.jp-ThinkMessage.jp-mod-user').length === 1,
      null,
      { timeout: TIMEOUT }
    );
    assert.match(
      await page.locator('.jp-ThinkRewindNote').innerText(),
      /conversation is back to before the message/
    );
    await lab.scriptReplies([{ text: 'answer four' }]);
    await page.keyboard.press('Enter');
    await page
      .locator('.jp-ThinkMessage.jp-mod-assistant', { hasText: 'answer four' })
      .waitFor({ timeout: TIMEOUT });
    await waitIdle(page);
    await userMessage(page, 'second edited')
      .getByRole('group', { name: 'Version 3 of 3 of this message' })
      .waitFor({ timeout: TIMEOUT });

    // During a run: the run stops first, then the conversation goes back.
    await lab.scriptReplies([
      {
        tokens: Array.from({ length: 400 }, (_, i) => ` w${i}`),
        delay: 0.02
      }
    ]);
    await page.fill('.jp-ThinkComposer-input', 'a long one');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.jp-ThinkMessage[data-status="streaming"]', {
      timeout: TIMEOUT
    });
    // Every text the rewind note shows on the way, however briefly.
    await page.evaluate(() => {
      window.rewindNotes = [];
      new window.MutationObserver(() => {
        const note = document.querySelector('.jp-ThinkRewindNote');
        const text = note?.textContent ?? '';
        if (text && window.rewindNotes.at(-1) !== text) {
          window.rewindNotes.push(text);
        }
      }).observe(document.querySelector('.jp-ThinkChat'), {
        subtree: true,
        childList: true,
        characterData: true
      });
    });
    await rewind(page, 'a long one', 'Restore conversation');
    await page.waitForFunction(
      () =>
        document.querySelector('.jp-ThinkComposer-input')?.value ===
        'a long one',
      null,
      { timeout: TIMEOUT }
    );
    await waitIdle(page);
    assert.equal(await userMessage(page, 'a long one').count(), 0);
    const notes = await page.evaluate(() => window.rewindNotes);
    assert.ok(
      notes.includes('Stopping the run, then rewinding…'),
      JSON.stringify(notes)
    );
    assert.match(notes.at(-1), /conversation is back to before the message/);
    assert.equal(await users(page).count(), 2);
    await setSidebarWidth(page, 280);
    await shot(page, 'rewind-versions-280px', chat(page));
    assert.deepEqual(await overflowing(page), []);
  });

  test('switching versions "with files" takes the open file along; "conversation" leaves it', async () => {
    ui = await launchLab({ files: { 'notes.txt': 'draft\n' }, page: false });
    const { lab, context } = ui;
    const page = await context.newPage();
    await page.goto(`${lab.url}/lab/tree/notes.txt?token=${lab.token}&reset`);
    const editor = page.locator('.jp-FileEditor .cm-content').first();
    await editor.getByText('draft').waitFor({ timeout: TIMEOUT });
    await openChat(page);
    const sid = await newSession(page, lab);
    const notes = path.join(lab.root, 'notes.txt');
    const writes = content => [
      { tool_calls: [['read_file', { path: 'notes.txt' }]] },
      { tool_calls: [['write_file', { path: 'notes.txt', content }]] },
      { text: `wrote ${content.trim()}` }
    ];

    // Version 1 of the request writes "version one"; "Restore both" takes the file and
    // the conversation back, and the request sent again (version 2) writes "version two".
    await lab.scriptReplies(writes('version one\n'));
    await turn(page, 'write it', 'wrote version one');
    await editor.getByText('version one').waitFor({ timeout: TIMEOUT });
    await rewind(page, 'write it', 'Restore both');
    await editor.getByText('draft').waitFor({ timeout: TIMEOUT });
    await page.waitForFunction(
      () =>
        document.querySelector('.jp-ThinkComposer-input')?.value === 'write it',
      null,
      { timeout: TIMEOUT }
    );
    await lab.scriptReplies(writes('version two\n'));
    await page.keyboard.press('Enter');
    await page
      .locator('.jp-ThinkMessage.jp-mod-assistant', {
        hasText: 'wrote version two'
      })
      .waitFor({ timeout: TIMEOUT });
    await waitIdle(page);
    await editor.getByText('version two').waitFor({ timeout: TIMEOUT });
    await waitDisk(notes, 'version two\n');

    const message = userMessage(page, 'write it');
    const pick = async (arrow, label) => {
      await message.getByRole('button', { name: arrow }).click();
      await message.getByRole('button', { name: label, exact: true }).click();
    };
    const version = n =>
      message
        .getByRole('group', { name: `Version ${n} of 2 of this message` })
        .waitFor({ timeout: TIMEOUT });
    await version(2);
    const PREV = 'Show the previous version of this message';
    const NEXT = 'Show the next version of this message';

    // "Switch conversation": version 1's answer shows, the file stays as it is.
    await message.getByRole('button', { name: PREV }).click();
    const choices = message.getByRole('group', {
      name: 'Switch to version 1 of 2'
    });
    await choices.waitFor({ timeout: TIMEOUT });
    assert.deepEqual(await axeViolations(page), []);
    await shot(page, 'switch-choices', chat(page));
    await choices
      .getByRole('button', { name: 'Switch conversation', exact: true })
      .click();
    await page
      .locator('.jp-ThinkMessage.jp-mod-assistant', {
        hasText: 'wrote version one'
      })
      .waitFor({ timeout: TIMEOUT });
    await version(1);
    await waitIdle(page);
    assert.equal(await page.locator('.jp-ThinkRewindNote').count(), 0);
    await editor.getByText('version two').waitFor();
    assert.equal(fs.readFileSync(notes, 'utf8'), 'version two\n');
    await pick(NEXT, 'Switch conversation');
    await version(2);

    // "Switch conversation and files": version 1's content in the open tab and on disk,
    // and the note says what changed.
    await pick(PREV, 'Switch conversation and files');
    const note = page.locator('.jp-ThinkRewindNote');
    await note
      .getByText(
        'Switched the conversation and files to this version: restored notes.txt.'
      )
      .waitFor({ timeout: TIMEOUT });
    await version(1);
    await editor.getByText('version one').waitFor({ timeout: TIMEOUT });
    await waitDisk(notes, 'version one\n');
    const { messages } = await lab.api('GET', `sessions/${sid}/messages`);
    assert.ok(
      messages.some(m => m.content === 'wrote version one'),
      'the server shows version 1'
    );
    await shot(page, 'switch-with-files');

    // Back with the keyboard; Escape first closes the choices and keeps the focus.
    const next = message.getByRole('button', { name: NEXT });
    await next.press('Enter');
    await page.waitForFunction(
      () => document.activeElement?.textContent === 'Switch conversation',
      null,
      { timeout: TIMEOUT }
    );
    await page.keyboard.press('Escape');
    await page.waitForFunction(
      () =>
        document.activeElement?.getAttribute('aria-label') ===
        'Show the next version of this message',
      null,
      { timeout: TIMEOUT }
    );
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      () => document.activeElement?.textContent === 'Switch conversation',
      null,
      { timeout: TIMEOUT }
    );
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await version(2);
    await editor.getByText('version two').waitFor({ timeout: TIMEOUT });
    await waitDisk(notes, 'version two\n');
    await page
      .locator('.jp-ThinkMessage.jp-mod-assistant', {
        hasText: 'wrote version two'
      })
      .waitFor({ timeout: TIMEOUT });
  });
});
