/**
 * Review mode, against a real JupyterLab, server, kernels, rooms and sandbox (only the
 * model is scripted): with the sidebar's Review switch on, the agent changes two cells of
 * the open notebook and a helper module, and runs the tests in the sandbox against its
 * proposal; the live notebook and files stay as they were. The person sees the proposal in
 * the sidebar (a diff per file and cell) and inline in the notebook, accepts one cell and
 * rejects the other (from the keyboard) while typing in a third, and accepts the helper's
 * hunk: the saved notebook has exactly the accepted cell, the typing and not the rejected
 * cell.
 */

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterEach, describe, test } from 'node:test';

import { launchLab, shot } from './harness.mjs';

const TIMEOUT = 60000;
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let ui;

/** A notebook of three code cells with known ids, on the python3 kernel. */
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
    cells: [
      cell('load', 'x = 1'),
      cell('plot', 'y = 2'),
      cell('mine', 'z = 3')
    ],
    metadata: { kernelspec: { name: 'python3', display_name: 'Python 3' } },
    nbformat: 4,
    nbformat_minor: 5
  });
}

const HELPER = 'def double(x):\n    return 2 * x\n';
const HELPER_NEW = `${HELPER}\n\ndef triple(x):\n    return 3 * x\n`;
// Passes only where helper.py has the proposal's `triple`.
const TEST_HELPER =
  'from helper import double, triple\n\n\ndef test_helper():\n    assert double(2) == 4\n    assert triple(2) == 6\n';

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

/** The sources of the notebook's cells as the page shows them (decorations left out). */
function pageCells(p) {
  return p.evaluate(() =>
    [...document.querySelectorAll('.jp-NotebookPanel .jp-Cell')].map(c =>
      [...c.querySelectorAll('.jp-Cell-inputArea .cm-content .cm-line')]
        .map(l => l.textContent)
        .join('\n')
    )
  );
}

async function waitCells(p, want) {
  await p.waitForFunction(
    want => {
      const got = [
        ...document.querySelectorAll('.jp-NotebookPanel .jp-Cell')
      ].map(c =>
        [...c.querySelectorAll('.jp-Cell-inputArea .cm-content .cm-line')]
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

const src = c => (Array.isArray(c.source) ? c.source.join('') : c.source);

describe('review mode', () => {
  afterEach(async t => {
    await ui?.lab.reportFailure(t);
    await ui?.close();
    ui = undefined;
  });

  test('a proposal is reviewed in the sidebar and inline, cell by cell', async () => {
    ui = await launchLab({
      files: {
        'analysis.ipynb': analysisNotebook(),
        'helper.py': HELPER,
        'test_helper.py': TEST_HELPER
      },
      notebook: 'analysis.ipynb',
      sidebar: true
    });
    const { lab, page } = ui;
    const nbFile = path.join(lab.root, 'analysis.ipynb');
    await waitCells(page, ['x = 1', 'y = 2', 'z = 3']);
    const sid = await newSession(page, lab);

    // The header's switch turns review mode on for this session.
    const toggle = page.getByRole('button', { name: 'Review mode' });
    assert.equal(await toggle.getAttribute('aria-pressed'), 'false');
    await toggle.click();
    await page.waitForSelector('.jp-ThinkReview-toggle[aria-pressed="true"]', {
      timeout: TIMEOUT
    });
    assert.equal((await lab.api('GET', `sessions/${sid}`)).review, true);

    await lab.scriptReplies([
      { tool_calls: [['read_notebook', { path: 'analysis.ipynb' }]] },
      {
        tool_calls: [
          [
            'edit_cell',
            { path: 'analysis.ipynb', cell_id: 'load', source: 'x = 10' }
          ]
        ]
      },
      {
        tool_calls: [
          [
            'edit_cell',
            { path: 'analysis.ipynb', cell_id: 'plot', source: 'y = 20' }
          ]
        ]
      },
      { tool_calls: [['read_file', { path: 'helper.py' }]] },
      {
        tool_calls: [['write_file', { path: 'helper.py', content: HELPER_NEW }]]
      },
      {
        tool_calls: [
          ['bash', { command: 'python -m pytest -q -p no:cacheprovider' }]
        ]
      },
      { text: 'proposal ready' }
    ]);
    await page.fill('.jp-ThinkComposer-input', 'add triple, tune the cells');
    await page.keyboard.press('Enter');
    await page
      .locator('.jp-ThinkMessage.jp-mod-assistant', {
        hasText: 'proposal ready'
      })
      .waitFor({ timeout: TIMEOUT });
    await waitIdle(page);

    // The tests ran in the sandbox against the proposal, and passed.
    const asked = (await lab.modelStats()).requests;
    const seen = asked[asked.length - 1].messages;
    const pytest = seen[seen.length - 1];
    assert.equal(pytest.role, 'tool');
    assert.match(pytest.content, /^1 passed/m, pytest.content);

    // The sidebar lists both files: the notebook's two cells and the helper's hunk.
    const panel = page.locator('.jp-ThinkReview');
    await panel
      .locator('.jp-ThinkReview-file[data-path="helper.py"]')
      .waitFor({ timeout: TIMEOUT });
    await page
      .locator('.jp-ThinkReview-cell')
      .nth(1)
      .waitFor({ timeout: TIMEOUT });
    assert.equal(await page.locator('.jp-ThinkReview-cell').count(), 2);
    assert.equal(await page.locator('.jp-ThinkReview-hunk').count(), 1);
    assert.match(
      await panel.locator('.jp-ThinkReview-hunk').innerText(),
      /\+def triple\(x\):/
    );

    // Nothing reached the live notebook, its file or the helper.
    assert.deepEqual(await pageCells(page), ['x = 1', 'y = 2', 'z = 3']);
    const onDisk = () =>
      JSON.parse(fs.readFileSync(nbFile, 'utf8')).cells.map(src);
    assert.deepEqual(onDisk(), ['x = 1', 'y = 2', 'z = 3']);
    assert.equal(
      fs.readFileSync(path.join(lab.root, 'helper.py'), 'utf8'),
      HELPER
    );

    // Inline: each proposed cell on its live cell, with Accept and Reject.
    const inline = page.locator('.jp-NotebookPanel .jp-ThinkReviewInline');
    await inline.nth(1).waitFor({ timeout: TIMEOUT });
    assert.equal(await inline.count(), 2);
    const cell = i => page.locator('.jp-NotebookPanel .jp-Cell').nth(i);
    const marked = i =>
      cell(i)
        .locator('.jp-ThinkReviewInline .jp-ThinkReview-line')
        .allInnerTexts()
        .then(ts => ts.map(t => t.trimEnd()));
    assert.deepEqual(await marked(0), ['@@ -1 +1 @@', '-x = 1', '+x = 10']);
    assert.deepEqual(await marked(1), ['@@ -1 +1 @@', '-y = 2', '+y = 20']);
    await shot(page, 'review-proposal');
    assert.deepEqual(await axeViolations(page), []);

    // The person types in the third cell, accepts the first, rejects the second from
    // the keyboard, and types on.
    await cell(2).locator('.cm-content').click();
    await page.keyboard.press('End');
    await page.keyboard.type('  # mine', { delay: 20 });
    await page
      .getByRole('button', { name: 'Accept proposed change to cell 1' })
      .click();
    await cell(2).locator('.cm-content').click();
    await page.keyboard.press('End');
    await page.keyboard.type(' too', { delay: 20 });
    await waitCells(page, ['x = 10', 'y = 2', 'z = 3  # mine too']);
    const reject = page.getByRole('button', {
      name: 'Reject proposed change to cell 2'
    });
    await reject.focus();
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      () => !document.querySelector('.jp-NotebookPanel .jp-ThinkReviewInline'),
      null,
      { timeout: TIMEOUT }
    );
    await waitCells(page, ['x = 10', 'y = 2', 'z = 3  # mine too']);
    // The notebook left the proposal; the helper's hunk waits, accepted from the sidebar.
    await page
      .locator('.jp-ThinkReview-file[data-path="analysis.ipynb"]')
      .waitFor({ state: 'detached', timeout: TIMEOUT });
    await page
      .getByRole('button', { name: 'Accept hunk 1 of helper.py' })
      .click();
    await waitDisk(path.join(lab.root, 'helper.py'), HELPER_NEW);
    await page
      .locator('.jp-ThinkReview-file')
      .first()
      .waitFor({ state: 'detached', timeout: TIMEOUT });
    await shot(page, 'review-decided');

    // Saved: exactly the accepted cell, the typing, not the rejected cell.
    await cell(2).locator('.cm-content').click();
    await page.keyboard.press('Control+s');
    await page.waitForFunction(
      () => !document.querySelector('.jp-NotebookPanel .jp-mod-dirty'),
      null,
      { timeout: TIMEOUT }
    );
    const nb = JSON.parse(fs.readFileSync(nbFile, 'utf8'));
    assert.deepEqual(nb.cells.map(src), [
      'x = 10',
      'y = 2',
      'z = 3  # mine too'
    ]);
    assert.deepEqual(
      nb.cells.map(c => c.id),
      ['load', 'plot', 'mine']
    );

    // With review mode off, "Propose only" holds one message's edits for review.
    await toggle.click();
    await page.waitForSelector('.jp-ThinkReview-toggle[aria-pressed="false"]', {
      timeout: TIMEOUT
    });
    const proposeOnly = page.getByRole('button', { name: 'Propose only' });
    await proposeOnly.click();
    assert.equal(await proposeOnly.getAttribute('aria-pressed'), 'true');
    await lab.scriptReplies([
      { tool_calls: [['read_file', { path: 'notes.md' }]] },
      {
        tool_calls: [
          [
            'write_file',
            { path: 'notes.md', content: '# Notes\n\nProposed.\n' }
          ]
        ]
      },
      { tool_calls: [['read_notebook', { path: 'analysis.ipynb' }]] },
      {
        tool_calls: [
          [
            'edit_cell',
            { path: 'analysis.ipynb', cell_id: 'mine', source: 'z = 30' }
          ]
        ]
      },
      { text: 'proposed a note' }
    ]);
    await page.fill('.jp-ThinkComposer-input', 'rewrite the notes');
    await page.keyboard.press('Enter');
    await page
      .locator('.jp-ThinkMessage.jp-mod-assistant', {
        hasText: 'proposed a note'
      })
      .waitFor({ timeout: TIMEOUT });
    assert.equal(await proposeOnly.getAttribute('aria-pressed'), 'false');
    await page
      .locator('.jp-ThinkReview-file[data-path="notes.md"]')
      .waitFor({ timeout: TIMEOUT });
    const notes = path.join(lab.root, 'notes.md');
    const NOTES = '# Notes\n\nHello from notes.\n';
    assert.equal(fs.readFileSync(notes, 'utf8'), NOTES);
    await shot(page, 'review-propose-only', page.locator('.jp-ThinkChat'));

    // The person changes the line the agent proposes to change: Accept reports the
    // conflict on that cell, inline and in the sidebar, and writes nothing over the typing.
    await cell(2).locator('.cm-content').click();
    await page.keyboard.press('End');
    await page.keyboard.type('!', { delay: 20 });
    await waitCells(page, ['x = 10', 'y = 2', 'z = 3  # mine too!']);
    await page
      .getByRole('button', { name: 'Accept proposed change to cell 3' })
      .click();
    const conflict = cell(2).locator('.jp-ThinkReviewInline-conflict');
    await conflict.waitFor({ timeout: TIMEOUT });
    assert.match(await conflict.innerText(), /^Conflict: /);
    await page
      .locator(
        '.jp-ThinkReview-cell[data-id="analysis.ipynb::cell:mine"] .jp-ThinkReview-conflict'
      )
      .waitFor({ timeout: TIMEOUT });
    assert.deepEqual(await pageCells(page), [
      'x = 10',
      'y = 2',
      'z = 3  # mine too!'
    ]);
    await shot(page, 'review-conflict');
    await page
      .getByRole('button', { name: 'Reject all proposed changes', exact: true })
      .click();
    await page
      .locator('.jp-ThinkReview-file')
      .first()
      .waitFor({ state: 'detached', timeout: TIMEOUT });
    assert.equal(fs.readFileSync(notes, 'utf8'), NOTES);
  });
});
