/**
 * Browser tests of the sidebar's layout against a real JupyterLab, real think kernels and
 * the real store; only the model is scripted (see harness.mjs). They assert layout facts
 * (bounding boxes, scroll positions, widths) rather than the presence of elements:
 * following the conversation, a 2,000-message session, decided things folding away, the
 * context chips, no horizontal overflow at 280 px and at 200% zoom, notifications clear
 * of the composer, and the setup card filled from the server.
 *
 * Run: `node --test --test-concurrency=1 ui-tests/sidebar_layout.e2e.test.mjs` (after
 * `npm run build`; Chromium at /usr/bin/chromium).
 */

/* global Event, getComputedStyle */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';

import {
  SCRIPTS,
  extDir,
  launchLab,
  notebookText,
  openChat,
  openNotebook,
  openFile,
  repoDir,
  shot
} from './harness.mjs';

const TIMEOUT = 60000;

Object.assign(SCRIPTS, {
  decided: [
    {
      text: 'I will clean up first.',
      tool_calls: [['delete_file', { path: 'gone.txt' }]]
    },
    {
      text: 'Now the plan.',
      tool_calls: [
        [
          'create_subtask',
          { title: 'Count the lines', type: 'explore', name: 'count' }
        ],
        ['create_subtask', { title: 'List the files', type: 'explore' }]
      ]
    },
    {
      tool_calls: [
        ['complete_task', { task_id: 'count', result: '3 lines' }],
        ['list_tasks', {}]
      ]
    },
    { text: 'Both done.' }
  ],
  rejected: [
    {
      text: 'I will delete the notes.',
      tool_calls: [['delete_file', { path: 'notes.md' }]]
    },
    { text: 'Understood, I kept notes.md.' }
  ],
  reminder: [
    {
      text: 'Setting it.',
      tool_calls: [
        ['schedule_reminder', { when: 'in 2 seconds', message: 'stretch' }]
      ]
    },
    { text: 'Reminder set.' },
    { text: 'Stretched.' }
  ]
});

let ui;
let lab;
let page;
// Seeded before the page opens, so its sessions list has them.
let longRead;
let big;
let empty;
// The session with a decided approval and a finished task tree (for the width checks).
let decidedSession;

const scroller = p => p.locator('.jp-ThinkChat .jp-ThinkMessages');
const sidebar = p => p.locator('.jp-ThinkChat');

async function newSession(p) {
  const known = (await lab.api('GET', 'sessions')).sessions.map(s => s.id);
  await p.getByRole('button', { name: 'New session' }).click();
  await p.waitForFunction(known => {
    const el = document.querySelector('.jp-ThinkSessions-select');
    return el && el.value && !known.includes(el.value);
  }, known);
  await p.waitForSelector('.jp-ThinkStatus[data-status="idle"]');
}

async function send(p, kind, text) {
  await lab.script(kind);
  await p.fill('.jp-ThinkComposer-input', text);
  await p.keyboard.press('Enter');
}

async function waitIdle(p) {
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

/** The store's file, as the server's log names it when it opens it. */
function storePath() {
  const found = fs
    .readFileSync(lab.log, 'utf8')
    .match(/Think store: (\S+think\.db)/);
  assert.ok(found, 'the server log names its store');
  return found[1];
}

/** A session with `n` stored messages (ids `<session id>-seed-<i>`). */
async function seeded(title, n) {
  const session = await lab.api('POST', 'sessions', { title });
  const r = spawnSync(
    'python3',
    [
      path.join(extDir, 'ui-tests', 'seed_store.py'),
      storePath(),
      session.id,
      String(n)
    ],
    { env: { ...process.env, PYTHONPATH: repoDir }, encoding: 'utf8' }
  );
  assert.equal(r.status, 0, `seeding failed: ${r.stderr}`);
  return session;
}

/** Open notes.md in an editor tab, from the file browser. */
async function openNotes(p) {
  const item = p.locator('.jp-DirListing-item:has-text("notes.md")');
  if (!(await item.isVisible())) {
    await p.locator('.jp-SideBar [data-id="filebrowser"]').click();
  }
  await item.dblclick();
  await p.waitForSelector(
    '.lm-DockPanel-tabBar .lm-TabBar-tab.jp-mod-current:has-text("notes.md")'
  );
}

/** Where the scroller is: its scroll numbers and the newest messages' boxes in it. */
function geometry(p) {
  return p.evaluate(() => {
    const el = document.querySelector('.jp-ThinkChat .jp-ThinkMessages');
    const view = el.getBoundingClientRect();
    const box = node => {
      if (!node) {
        return null;
      }
      const r = node.getBoundingClientRect();
      return { top: r.top, bottom: r.bottom };
    };
    const users = el.querySelectorAll('.jp-ThinkMessage.jp-mod-user');
    const all = el.querySelectorAll('.jp-ThinkMessage');
    return {
      scrollTop: el.scrollTop,
      scrollHeight: el.scrollHeight,
      clientHeight: el.clientHeight,
      view: { top: view.top, bottom: view.bottom },
      lastUser: box(users[users.length - 1]),
      lastUserText: users[users.length - 1]?.textContent ?? '',
      last: box(all[all.length - 1]),
      mounted: all.length
    };
  });
}

/** Wait until the transcript shows its end (Markdown renders after the messages mount). */
async function waitAtEnd(p) {
  await p.waitForFunction(
    () => {
      const el = document.querySelector('.jp-ThinkChat .jp-ThinkMessages');
      return el.scrollHeight - el.scrollTop - el.clientHeight < 40;
    },
    null,
    { timeout: 5000 }
  );
}

const inside = (box, view) =>
  !!box && box.top >= view.top - 1 && box.bottom <= view.bottom + 1;

/** Scroll the transcript up with the mouse wheel, as a reader does. */
async function wheelUp(p, dy = 600) {
  const box = await scroller(p).boundingBox();
  await p.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await p.mouse.wheel(0, -dy);
  await p.waitForFunction(
    () => !!document.querySelector('.jp-ThinkJumpLatest'),
    null,
    { timeout: 5000 }
  );
  // The wheel scrolls smoothly: wait until the position holds for a few frames.
  await p.evaluate(
    () =>
      new Promise(resolve => {
        const el = document.querySelector('.jp-ThinkChat .jp-ThinkMessages');
        let last = -1;
        let same = 0;
        const tick = () => {
          if (el.scrollTop === last) {
            same++;
          } else {
            same = 0;
            last = el.scrollTop;
          }
          if (same >= 5) {
            resolve();
          } else {
            requestAnimationFrame(tick);
          }
        };
        tick();
      })
  );
}

/** Drag the splitter of the right sidebar until the Think panel is `width` px wide. */
async function setSidebarWidth(p, width) {
  const panel = await sidebar(p).boundingBox();
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
  await p.mouse.move(handle.x + (panel.width - width), handle.y, {
    steps: 5
  });
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

/** Every part of the sidebar that scrolls wider than it is, and what sticks out. */
function overflow(p) {
  return p.evaluate(() => {
    const chat = document.querySelector('.jp-ThinkChat');
    const right = chat.getBoundingClientRect().right;
    const wide = [];
    const parts = [
      '.jp-ThinkChat',
      '.jp-ThinkChat-body',
      '.jp-ThinkChat-header',
      '.jp-ThinkSessions',
      '.jp-ThinkTasks',
      '.jp-ThinkMessages',
      '.jp-ThinkApprovals',
      '.jp-ThinkComposer',
      '.jp-ThinkComposer-bar'
    ];
    for (const sel of parts) {
      for (const el of chat.parentElement.querySelectorAll(sel)) {
        if (el.scrollWidth > el.clientWidth) {
          wide.push(`${sel}: ${el.scrollWidth} > ${el.clientWidth}`);
        }
      }
    }
    const controls = [
      '.jp-ThinkApprovals-policy select',
      '.jp-ThinkComposer-attach',
      '.jp-ThinkComposer-send',
      '.jp-ThinkComposer-clip',
      '.jp-ThinkJumpLatest'
    ];
    for (const sel of controls) {
      for (const el of chat.querySelectorAll(sel)) {
        const r = el.getBoundingClientRect();
        if (r.width && r.right > right + 0.5) {
          wide.push(`${sel} ends at ${r.right} > ${right}`);
        }
      }
    }
    // A card clips what sticks out of it: its status must end inside it.
    for (const card of chat.querySelectorAll('.jp-ThinkToolCard')) {
      const edge = card.getBoundingClientRect().right;
      const status = card.querySelector('.jp-ThinkToolCard-status');
      if (status && status.getBoundingClientRect().right > edge + 0.5) {
        wide.push(`the status of ${card.textContent.slice(0, 30)} is cut`);
      }
    }
    return {
      wide,
      cards: chat.querySelectorAll('.jp-ThinkToolCard').length,
      width: chat.getBoundingClientRect().width,
      scrollWidth: chat.scrollWidth,
      clientWidth: chat.clientWidth
    };
  });
}

describe('The sidebar layout', () => {
  before(async () => {
    ui = await launchLab({
      sidebar: true,
      files: {
        'magic.ipynb': notebookText(
          ['%%think\n# Plot the sales', '# Plot the sales'],
          'python3'
        ),
        'asks.ipynb': notebookText(['', '# Plot the sales'], 'think'),
        'gone.txt': 'bye\n'
      },
      beforePage: async started => {
        lab = started.lab;
        longRead = await seeded('Long read', 60);
        big = await seeded('Two thousand', 2000);
        empty = await lab.api('POST', 'sessions', { title: 'Empty' });
      }
    });
    ({ lab, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('sending shows your message and follows the stream; scrolling up stops following', async () => {
    const s = longRead;
    await page.selectOption('.jp-ThinkSessions-select', s.id);
    await page.waitForSelector(`[data-message-id="${s.id}-seed-59"]`);
    await page.waitForSelector('.jp-ThinkStatus[data-status="idle"]');
    await waitAtEnd(page);
    let g = await geometry(page);
    assert.ok(g.scrollHeight > g.clientHeight * 2, 'the history scrolls');
    assert.ok(inside(g.last, g.view), 'opens at the newest message');
    // Scrolled up to read: the list stays where the reader is.
    await wheelUp(page);
    g = await geometry(page);
    assert.ok(!inside(g.last, g.view), 'the newest message is out of view');
    // Sending shows the message sent, and then follows the answer as it streams.
    await send(page, 'slow', 'please write a long answer');
    await page.waitForFunction(() =>
      [...document.querySelectorAll('.jp-ThinkMessage.jp-mod-user')]
        .at(-1)
        ?.textContent.includes('please write a long answer')
    );
    g = await geometry(page);
    assert.ok(inside(g.lastUser, g.view), JSON.stringify(g));
    assert.equal(await page.locator('.jp-ThinkJumpLatest').count(), 0);
    await page.waitForSelector(
      '.jp-ThinkMessage.jp-mod-assistant[data-status="streaming"] .jp-ThinkMarkdown',
      { timeout: TIMEOUT }
    );
    const textLength = () =>
      page.evaluate(
        () =>
          [...document.querySelectorAll('.jp-ThinkMessage.jp-mod-assistant')]
            .at(-1)
            .textContent.trim().length
      );
    // Followed while it grows: the answer's end stays in view.
    for (let i = 0; i < 3; i++) {
      const before = await textLength();
      await page.waitForFunction(
        n =>
          [...document.querySelectorAll('.jp-ThinkMessage.jp-mod-assistant')]
            .at(-1)
            .textContent.trim().length >
          n + 40,
        before
      );
      g = await geometry(page);
      assert.ok(
        g.scrollHeight - g.scrollTop - g.clientHeight < 40,
        `following: ${JSON.stringify(g)}`
      );
    }
    await shot(page, 'sidebar-following', sidebar(page));
    // Scrolling up mid-stream stops following: the words keep coming, the view stays.
    await wheelUp(page, 300);
    const held = (await geometry(page)).scrollTop;
    const before = await textLength();
    await page.waitForFunction(
      n =>
        [...document.querySelectorAll('.jp-ThinkMessage.jp-mod-assistant')]
          .at(-1)
          .textContent.trim().length >
        n + 80,
      before
    );
    g = await geometry(page);
    assert.ok(
      Math.abs(g.scrollTop - held) <= 2,
      `held at ${held}: ${g.scrollTop}`
    );
    assert.ok(g.scrollHeight - g.scrollTop - g.clientHeight > 40);
    const jump = page.getByRole('button', { name: 'Jump to latest' });
    const jumpBox = await jump.boundingBox();
    const view = await scroller(page).boundingBox();
    assert.ok(
      jumpBox.y >= view.y && jumpBox.y + jumpBox.height <= view.y + view.height,
      'Jump to latest sits over the transcript'
    );
    await shot(page, 'sidebar-jump-to-latest', sidebar(page));
    await jump.click();
    g = await geometry(page);
    assert.ok(g.scrollHeight - g.scrollTop - g.clientHeight < 40);
    await waitIdle(page);
    g = await geometry(page);
    assert.ok(inside(g.last, g.view) || g.last.bottom <= g.view.bottom + 1);
  });

  test('a 2,000-message session opens in a render window and loads earlier on scroll-up', async () => {
    await page.selectOption('.jp-ThinkSessions-select', empty.id);
    await page.waitForSelector('.jp-ThinkStatus[data-status="idle"]');
    // From the choice of the session to the newest message painted.
    const ms = await page.evaluate(
      ({ id, last }) =>
        new Promise((resolve, reject) => {
          const select = document.querySelector('.jp-ThinkSessions-select');
          const t0 = performance.now();
          select.value = id;
          select.dispatchEvent(new Event('change', { bubbles: true }));
          const tick = () => {
            if (document.querySelector(`[data-message-id="${last}"]`)) {
              requestAnimationFrame(() => resolve(performance.now() - t0));
            } else if (performance.now() - t0 > 30000) {
              reject(new Error('the newest message never showed'));
            } else {
              requestAnimationFrame(tick);
            }
          };
          tick();
        }),
      { id: big.id, last: `${big.id}-seed-1999` }
    );
    await waitAtEnd(page);
    let g = await geometry(page);
    console.log(
      `2,000-message session: newest message painted in ${ms.toFixed(0)} ms; ${g.mounted} messages mounted`
    );
    assert.ok(g.mounted <= 60, `${g.mounted} messages mounted`);
    assert.ok(ms < 5000, `opened in ${ms} ms`);
    assert.ok(inside(g.last, g.view), 'opens at the newest message');
    // Scrolled to the top, earlier messages mount, and what was read stays in place.
    const firstId = await page
      .locator('.jp-ThinkMessages .jp-ThinkMessage')
      .first()
      .getAttribute('data-message-id');
    const t0 = Date.now();
    await page.evaluate(() => {
      document.querySelector('.jp-ThinkChat .jp-ThinkMessages').scrollTop = 0;
    });
    await page.waitForFunction(
      n =>
        document.querySelectorAll('.jp-ThinkMessages .jp-ThinkMessage').length >
        n,
      g.mounted
    );
    await page.waitForFunction(id => {
      const el = document.querySelector(`[data-message-id="${id}"]`);
      const view = document
        .querySelector('.jp-ThinkChat .jp-ThinkMessages')
        .getBoundingClientRect();
      const r = el.getBoundingClientRect();
      return r.top >= view.top - 5 && r.top <= view.bottom;
    }, firstId);
    console.log(`  earlier messages mounted in ${Date.now() - t0} ms`);
    g = await geometry(page);
    assert.ok(g.scrollTop > 0, 'the reader was not thrown to the top');
    assert.equal(await page.locator('.jp-ThinkJumpLatest').count(), 1);
  });

  test('decided approvals and finished tasks fold away; the conversation keeps half the height', async () => {
    await newSession(page);
    await send(page, 'decided', 'tidy up and plan');
    decidedSession = await page
      .locator('.jp-ThinkSessions-select')
      .inputValue();
    const pinned = page.locator(
      '.jp-ThinkApprovals .jp-ThinkApproval[data-status="pending"]'
    );
    await pinned.waitFor({ timeout: TIMEOUT });
    await pinned.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.waitForSelector('.jp-ThinkTasks', { timeout: TIMEOUT });
    await waitIdle(page);
    // The decided card left the area above the composer for its tool call's card.
    await page.waitForFunction(
      () => !document.querySelector('.jp-ThinkApprovals .jp-ThinkApproval')
    );
    const line = page.locator(
      '.jp-ThinkToolCard .jp-ThinkApprovalLine[data-status="approved"]'
    );
    await line.waitFor();
    assert.match(await line.textContent(), /^Approved .*via sidebar/);
    const lineBox = await line.locator('button').boundingBox();
    assert.ok(lineBox.height < 30, `one line: ${lineBox.height}px`);
    // The tasks area folded to its header when the request ended.
    await page.waitForFunction(
      () => !document.querySelector('li.jp-ThinkTask')
    );
    const tasksBox = await page.locator('.jp-ThinkTasks').boundingBox();
    assert.ok(tasksBox.height < 40, `tasks header only: ${tasksBox.height}px`);
    // Our tools read as text: no JSON in the create_subtask card.
    const created = page
      .locator('.jp-ThinkToolCard')
      .filter({ hasText: 'create_subtask' })
      .first();
    assert.equal(
      await created.locator('.jp-ThinkToolCard-args').textContent(),
      'Count the lines'
    );
    const half = async () => {
      const chat = await sidebar(page).boundingBox();
      const list = await scroller(page).boundingBox();
      return { list: list.height, chat: chat.height };
    };
    let h = await half();
    assert.ok(h.list >= h.chat / 2, `conversation ${h.list} of ${h.chat} px`);
    await shot(page, 'sidebar-decided-folded', sidebar(page));
    // Expanded, the line shows the whole card in the transcript.
    await line.locator('button').click();
    await line.locator('.jp-ThinkApproval').waitFor();
    assert.match(
      await line.locator('.jp-ThinkApproval').textContent(),
      /gone\.txt/
    );
    await line.locator('button').first().click();
    // Pinned open, the tree stays after the request ends.
    await page.getByRole('button', { name: 'Keep the tasks open' }).click();
    await page.waitForSelector('li.jp-ThinkTask');
    h = await half();
    assert.ok(
      h.list >= h.chat / 2,
      `pinned: conversation ${h.list} of ${h.chat} px`
    );
    await shot(page, 'sidebar-tasks-pinned', sidebar(page));
    await page.getByRole('button', { name: 'Keep the tasks open' }).click();
    await page.waitForFunction(
      () => !document.querySelector('li.jp-ThinkTask')
    );
  });

  test('a rejected call reads "rejected", in no error colour', async () => {
    await newSession(page);
    await send(page, 'rejected', 'delete my notes');
    const card = page.locator(
      '.jp-ThinkApprovals .jp-ThinkApproval[data-status="pending"]'
    );
    await card.waitFor({ timeout: TIMEOUT });
    await card.getByRole('button', { name: 'Reject' }).click();
    await waitIdle(page);
    const tool = page
      .locator('.jp-ThinkToolCard')
      .filter({ hasText: 'delete_file' });
    await tool.waitFor();
    assert.match(
      await tool.locator('.jp-ThinkToolCard-status').textContent(),
      /^rejected\b/
    );
    const colours = await tool.evaluate(el => {
      const probe = document.createElement('span');
      probe.style.color = 'var(--jp-error-color1)';
      document.body.appendChild(probe);
      const error = getComputedStyle(probe).color;
      probe.remove();
      const status = el.querySelector('.jp-ThinkToolCard-status');
      return {
        error,
        status: getComputedStyle(status).color,
        border: getComputedStyle(el).borderTopColor
      };
    });
    assert.notEqual(colours.status, colours.error);
    assert.notEqual(colours.border, colours.error);
    assert.match(
      await tool.locator('.jp-ThinkApprovalLine').textContent(),
      /^Rejected .*via sidebar/
    );
    await shot(page, 'sidebar-rejected', tool);
  });

  test('context is attached only when chosen, as a removable chip', async () => {
    await newSession(page);
    await openNotes(page);
    const offer = page.getByRole('button', { name: 'Attach notes.md' });
    await offer.waitFor();
    assert.equal(await page.locator('[data-kind="context"]').count(), 0);
    assert.match(
      await page.locator('.jp-ThinkComposer-input').getAttribute('placeholder'),
      /nothing is attached unless you add it/
    );
    await send(page, 'hello', 'no context please');
    await waitIdle(page);
    let { requests } = await lab.modelStats();
    let last = JSON.stringify(requests.at(-1).messages.at(-1).content);
    assert.doesNotMatch(last, /notes\.md/);
    await offer.click();
    const chip = page.locator('.jp-ThinkComposer [data-kind="context"]');
    await chip.waitFor();
    assert.match(await chip.textContent(), /notes\.md/);
    await shot(page, 'sidebar-context-chip', page.locator('.jp-ThinkComposer'));
    await send(page, 'hello', 'with the file');
    await waitIdle(page);
    ({ requests } = await lab.modelStats());
    last = JSON.stringify(requests.at(-1).messages.at(-1).content);
    assert.match(last, /notes\.md/);
    await chip.getByRole('button', { name: 'Remove notes.md' }).click();
    await offer.waitFor();
    assert.equal(await chip.count(), 0);
  });

  test('a notification keeps clear of the composer', async () => {
    await newSession(page);
    await send(page, 'reminder', 'remind me to stretch');
    const toast = page
      .locator('.Toastify__toast')
      .filter({ hasText: 'stretch' })
      .first();
    await toast.waitFor({ timeout: TIMEOUT });
    await page
      .waitForFunction(
        () => {
          const t = document.querySelector('.Toastify__toast');
          return t && getComputedStyle(t).transform === 'none';
        },
        null,
        { timeout: 5000 }
      )
      .catch(() => undefined); // the slide-in may keep a matrix transform
    const t = await toast.boundingBox();
    const c = await page.locator('.jp-ThinkComposer').boundingBox();
    const overlaps =
      t.x < c.x + c.width &&
      t.x + t.width > c.x &&
      t.y < c.y + c.height &&
      t.y + t.height > c.y;
    await shot(page, 'sidebar-notification', page);
    assert.ok(
      !overlaps,
      `toast ${JSON.stringify(t)} over composer ${JSON.stringify(c)}`
    );
    // The reminder's own run answers before the next test scripts the model.
    const sid = await page.locator('.jp-ThinkSessions-select').inputValue();
    await page.waitForFunction(
      async ({ url, token, sid }) => {
        const r = await fetch(`${url}/api/think/sessions/${sid}/messages`, {
          headers: { Authorization: `token ${token}` }
        });
        const { messages } = await r.json();
        return messages.some(m => m.content === 'Stretched.');
      },
      { url: lab.url, token: lab.token, sid },
      { timeout: TIMEOUT, polling: 250 }
    );
    await waitIdle(page);
  });

  test('nothing overflows at 280 px', async () => {
    // The busiest session: tool cards, a decided approval, a task tree.
    await page.selectOption('.jp-ThinkSessions-select', decidedSession);
    await page.waitForSelector('.jp-ThinkToolCard');
    await openNotes(page);
    await page.getByRole('button', { name: 'Attach notes.md' }).waitFor();
    const wide = await overflow(page);
    assert.deepEqual(wide.wide, [], `default width ${wide.width}`);
    await shot(page, 'sidebar-default-width', sidebar(page));
    await setSidebarWidth(page, 280);
    const narrow = await overflow(page);
    assert.ok(Math.abs(narrow.width - 280) <= 2, `width ${narrow.width}`);
    assert.ok(narrow.scrollWidth <= narrow.clientWidth);
    assert.ok(narrow.cards >= 3, `${narrow.cards} tool cards checked`);
    assert.deepEqual(narrow.wide, []);
    await shot(page, 'sidebar-280px', sidebar(page));
  });

  test('nothing overflows at 200% zoom', async () => {
    // 200% zoom of a 1400 x 900 window: half the CSS pixels, twice the device pixels.
    const zoomed = await ui.browser.newContext({
      viewport: { width: 700, height: 450 },
      deviceScaleFactor: 2
    });
    try {
      const { page: p } = await openFile(zoomed, lab, 'notes.md');
      await openChat(p);
      await p.getByRole('button', { name: 'Attach notes.md' }).waitFor();
      const r = await overflow(p);
      assert.ok(r.scrollWidth <= r.clientWidth, JSON.stringify(r));
      assert.deepEqual(r.wide, []);
      await shot(p, 'sidebar-zoom-200', sidebar(p));
    } finally {
      await zoomed.close();
    }
  });

  test('the setup card has Cancel and is filled from the server, not the page', async () => {
    await lab.api('PUT', 'model', {
      base_url: lab.modelUrl,
      model: 'saved-model'
    });
    await page.reload();
    await page.waitForSelector('#jp-main-dock-panel', { timeout: TIMEOUT });
    await openChat(page);
    const badge = page.getByRole('button', { name: 'Model settings' });
    await page.waitForSelector(
      '.jp-ThinkModelBadge-name:has-text("saved-model")'
    );
    // Deleted on the server (another tab, the API) after this page read it.
    await lab.api('DELETE', 'model');
    await badge.click();
    const form = page.locator('form.jp-ThinkSetup');
    await form.waitFor();
    assert.equal(
      await form.locator('.jp-ThinkSetup-model').inputValue(),
      'fake-model'
    );
    assert.match(await form.textContent(), /from the server's environment/);
    await shot(page, 'sidebar-setup-card', sidebar(page));
    await form.getByRole('button', { name: 'Cancel' }).click();
    await form.waitFor({ state: 'detached' });
    await page.locator('.jp-ThinkComposer-input').waitFor();
  });

  test('%%think cells and Think notebooks highlight Markdown; an empty one hints', async () => {
    const style = (p, cell) =>
      p.evaluate(index => {
        const cells = document.querySelectorAll('.jp-NotebookPanel .jp-Cell');
        const line = [...cells[index].querySelectorAll('.cm-line')].find(l =>
          l.textContent.includes('Plot the sales')
        );
        const el =
          [...line.querySelectorAll('span')].find(x =>
            x.textContent.includes('Plot')
          ) ?? line;
        const s = getComputedStyle(el);
        return {
          weight: Number(s.fontWeight),
          italic: s.fontStyle,
          color: s.color
        };
      }, cell);
    const python = await openNotebook(ui.context, lab, 'magic.ipynb');
    try {
      await python.waitForFunction(
        () =>
          document.querySelectorAll('.jp-NotebookPanel .jp-Cell .cm-line')
            .length >= 3
      );
      // Python highlights `# ...` as a comment; a %%think cell as a Markdown heading.
      await python.waitForFunction(() => {
        const line = document.querySelectorAll('.jp-NotebookPanel .jp-Cell')[0];
        return [...line.querySelectorAll('.cm-line span')].some(
          x => Number(getComputedStyle(x).fontWeight) >= 600
        );
      });
      await shot(
        python,
        'sidebar-think-magic-markdown',
        python.locator('.jp-NotebookPanel .jp-Notebook')
      );
      const magic = await style(python, 0);
      const comment = await style(python, 1);
      assert.ok(magic.weight >= 600, JSON.stringify(magic));
      assert.ok(comment.weight < 600, JSON.stringify(comment));
      assert.notEqual(magic.color, comment.color);
    } finally {
      await python.close();
    }
    const think = await openNotebook(ui.context, lab, 'asks.ipynb');
    try {
      await think.waitForSelector('.jp-CodeCell.jp-mod-thinkEmpty');
      const hint = await think.evaluate(
        () =>
          getComputedStyle(
            document.querySelector('.jp-mod-thinkEmpty .cm-line'),
            '::before'
          ).content
      );
      assert.match(hint, /Ask Think/);
      await think.waitForFunction(() => {
        const cell = document.querySelectorAll('.jp-NotebookPanel .jp-Cell')[1];
        return [...cell.querySelectorAll('.cm-line span')].some(
          x => Number(getComputedStyle(x).fontWeight) >= 600
        );
      });
      await shot(
        think,
        'sidebar-think-notebook',
        think.locator('.jp-NotebookPanel .jp-Notebook')
      );
      const heading = await style(think, 1);
      assert.ok(heading.weight >= 600, JSON.stringify(heading));
      // Typed into, the hint goes.
      await think.locator('.jp-Cell').first().locator('.cm-content').click();
      await think.keyboard.type('hello');
      await think.waitForFunction(
        () => !document.querySelector('.jp-CodeCell.jp-mod-thinkEmpty')
      );
    } finally {
      await think.close();
    }
  });
});
