/**
 * Browser test of live apps and "Run in background" against a real JupyterLab, real think
 * kernels, the real sandbox, store and app proxy; only the model is scripted (see
 * harness.mjs). One server for all steps.
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium).
 */

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';

import {
  launchLab,
  notebookText,
  openChat,
  shot,
  waitVisible
} from './harness.mjs';

const TIMEOUT = 90000;

/**
 * The app's page: it reports, in its own text, what its script could reach (JupyterLab's
 * DOM through `parent`, the cookies of Lab's origin), and what its own script file and a
 * fetch of its own data gave (a sandboxed frame's requests carry no login cookie: the
 * tab opens the app at its keyed path, which lets them in).
 */
const PAGE = version => `<!doctype html>
<title>Demo</title>
<h1 id="h">Hello from the demo app ${version}</h1>
<p id="parent"></p><p id="cookie"></p><p id="file"></p><p id="data"></p>
<script src="file.js"></script>
<script>
let p, c;
try { p = 'parent DOM: ' + parent.document.title; } catch (e) { p = 'parent blocked: ' + e.name; }
try { c = 'cookie: [' + document.cookie + ']'; } catch (e) { c = 'cookie blocked: ' + e.name; }
document.getElementById('parent').textContent = p;
document.getElementById('cookie').textContent = c;
fetch('data.json')
  .then(r => (r.ok ? r.json().then(d => 'data: ' + d.from) : 'data failed: ' + r.status))
  .catch(e => 'data failed: ' + e)
  .then(t => { document.getElementById('data').textContent = t; });
</script>
`;

/** The app: its page is read once, so an edit shows only after a restart. */
const APP = `import http.server, pathlib, think_app

PAGE = pathlib.Path("site/index.html").read_bytes()
FILE = b"document.getElementById('file').textContent = 'file: loaded';"


class Demo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/file.js"):
            body, kind = FILE, "text/javascript"
        elif self.path.startswith("/data.json"):
            body, kind = b'{"from": "the app"}', "application/json"
        else:
            body, kind = PAGE, "text/html"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


think_app.serve(Demo)
`;

let ui;
let lab;
let page;

/** The Think session of notebook `path`, once its kernel made one. */
async function sessionOf(path) {
  const deadline = Date.now() + TIMEOUT;
  for (;;) {
    const { sessions } = await lab.api('GET', 'sessions');
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

/**
 * Open JupyterLab again (the sidebar then reads the session last chosen) at its plain
 * address, and wait for the notebook its workspace restores. Not a reload: the first
 * page's address is `/lab/tree/bg.ipynb`, and JupyterLab brings that notebook to the front
 * again once its file browser is restored, which can come after an app's tab opened and
 * hide it.
 */
async function reopen() {
  await page.goto(`${lab.url}/lab?token=${lab.token}`);
  await page
    .locator('.jp-NotebookPanel .jp-Cell')
    .first()
    .waitFor({ state: 'attached', timeout: TIMEOUT });
}

describe('Live apps and background runs', () => {
  before(async () => {
    ui = await launchLab({
      notebook: 'bg.ipynb',
      files: {
        'bg.ipynb': notebookText([
          '%%bash\nfor i in 1 2 3; do echo "step $i"; sleep 0.3; done',
          '%%python\nimport sys\nprint("python", sys.version_info[0])'
        ])
      }
    });
    ({ lab, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('Run in background runs a %%bash and a %%python cell as jobs', async () => {
    const cells = page.locator('.jp-NotebookPanel .jp-CodeCell');
    // From the cell's context menu: the cell becomes a job cell and follows the job.
    const runInBackground = async n => {
      await cells
        .nth(n)
        .locator('.jp-InputArea-editor')
        .click({ button: 'right' });
      const item = page.locator('.lm-Menu-item', {
        hasText: 'Run in background (Think job)'
      });
      await item.waitFor({ timeout: TIMEOUT });
      await item.click();
      await page.waitForFunction(
        ([n, want]) => {
          const cell = document.querySelectorAll(
            '.jp-NotebookPanel .jp-CodeCell'
          )[n];
          const src = cell?.querySelector('.cm-content')?.textContent ?? '';
          const out = cell?.querySelector('.jp-OutputArea')?.textContent ?? '';
          return (
            src.startsWith('%%think_job') &&
            /job \S+: done/.test(out) &&
            out.includes(want)
          );
        },
        [n, n === 0 ? 'step 3' : 'python 3'],
        { timeout: TIMEOUT }
      );
    };
    await runInBackground(0);
    await shot(page, 'run-in-background', cells.nth(0));
    await runInBackground(1);
    assert.match(
      await cells.nth(1).locator('.cm-content').textContent(),
      /^%%think_jobpython3 -u - <<'THINK_PY_END'/
    );

    // They ran as jobs of the notebook's session.
    const sid = await sessionOf('bg.ipynb');
    const { jobs } = await lab.api('GET', `sessions/${sid}/jobs`);
    assert.deepEqual(
      jobs.map(j => j.state),
      ['done', 'done']
    );
  });

  test('an app the agent serves opens in a sandboxed Lab tab; Stop, Restart', async () => {
    const s = await lab.api('POST', 'sessions', { title: 'Apps' });
    await page.evaluate(
      id => window.localStorage.setItem('think:last-session', id),
      s.id
    );
    await reopen();
    await openChat(page);
    await page.waitForFunction(
      id => document.querySelector('.jp-ThinkSessions-select')?.value === id,
      s.id,
      { timeout: TIMEOUT }
    );
    await lab.scriptReplies([
      {
        text: 'Writing the app.',
        tool_calls: [
          ['write_file', { path: 'site/index.html', content: PAGE('v1') }],
          ['write_file', { path: 'app.py', content: APP }]
        ]
      },
      {
        text: 'Starting it.',
        tool_calls: [['serve_app', { command: 'python3 app.py', name: 'demo' }]]
      },
      { text: 'The demo app runs.' }
    ]);
    await lab.api('POST', `sessions/${s.id}/messages`, {
      content: 'make me a small demo web app'
    });

    // "Open app" on the serve_app card opens a main-area tab titled with the app's name.
    const open = page.locator('.jp-ThinkToolCard-openApp');
    await open.waitFor({ timeout: TIMEOUT });
    await open.click();
    const tab = page.locator('.jp-ThinkAppTab');
    await tab.waitFor({ timeout: TIMEOUT });
    const title = page.locator(
      '.lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current'
    );
    assert.equal((await title.textContent()).trim(), 'demo');
    const iframe = tab.locator('iframe');
    assert.equal(
      await iframe.getAttribute('sandbox'),
      'allow-scripts allow-forms'
    );

    // Its page shows, and its script reached neither Lab's DOM nor Lab's cookies.
    const app = tab.frameLocator('iframe');
    await app
      .locator('#h', { hasText: 'demo app v1' })
      .waitFor({ timeout: TIMEOUT });
    await app
      .locator('#data', { hasText: /^data/ })
      .waitFor({ timeout: TIMEOUT });
    assert.match(
      await app.locator('#parent').textContent(),
      /^parent blocked: SecurityError/
    );
    assert.match(
      await app.locator('#cookie').textContent(),
      /^cookie blocked: SecurityError/
    );
    assert.equal(await app.locator('#file').textContent(), 'file: loaded');
    assert.equal(await app.locator('#data').textContent(), 'data: the app');
    await shot(page, 'app-tab', page.locator('#jp-main-dock-panel'));

    // The same address without the token: refused.
    const url = `${lab.url}/api/think/sessions/${s.id}/apps/demo/`;
    assert.equal((await fetch(url)).status, 403);
    assert.equal(
      (await fetch(url, { headers: { Authorization: `token ${lab.token}` } }))
        .status,
      200
    );

    // The sidebar lists it; Stop ends it, and the tab says so.
    const line = page.locator('.jp-ThinkApps-line');
    await page.waitForFunction(
      () =>
        document.querySelector('.jp-ThinkApps-line')?.textContent ===
        'demo: running',
      null,
      { timeout: TIMEOUT }
    );
    await shot(page, 'apps-list', page.locator('.jp-ThinkApps'));
    await page.locator('.jp-ThinkApps-stop').click();
    await page.waitForFunction(
      () =>
        /^demo: stopped/.test(
          document.querySelector('.jp-ThinkApps-line')?.textContent ?? ''
        ),
      null,
      { timeout: TIMEOUT }
    );
    const note = tab.locator('.jp-ThinkAppFrame-note');
    await waitVisible(note, TIMEOUT);
    assert.match(await note.textContent(), /demo stopped/);
    const listed = await lab.api('GET', `sessions/${s.id}/apps`);
    assert.equal(listed.apps[0].state, 'stopped');
    await shot(page, 'app-stopped', page.locator('#jp-main-dock-panel'));

    // Edit its page, Restart: the tab loads the new page.
    fs.writeFileSync(path.join(lab.root, 'site', 'index.html'), PAGE('v2'));
    await page.locator('.jp-ThinkApps-restart').click();
    await app
      .locator('#h', { hasText: 'demo app v2' })
      .waitFor({ timeout: TIMEOUT });
    await note.waitFor({ state: 'hidden', timeout: TIMEOUT });
    assert.equal(await line.textContent(), 'demo: running');
    await shot(page, 'app-restarted', page.locator('#jp-main-dock-panel'));

    // An app that dies shows as crashed, with its exit code and log, and no Open.
    await lab.scriptReplies([
      {
        text: 'Starting another.',
        tool_calls: [
          ['serve_app', { command: 'echo boom >&2; exit 3', name: 'broken' }]
        ]
      },
      { text: 'It did not start.' }
    ]);
    await lab.api('POST', `sessions/${s.id}/messages`, {
      content: 'and a broken one'
    });
    const broken = page.locator('.jp-ThinkApps-app[data-state="crashed"]');
    await broken.waitFor({ timeout: TIMEOUT });
    assert.equal(
      await broken.locator('.jp-ThinkApps-line').textContent(),
      'broken: crashed (exit 3)'
    );
    assert.equal(await broken.locator('.jp-ThinkApps-open').count(), 0);
    assert.match(await broken.locator('pre').textContent(), /boom/);
    await shot(page, 'apps-crashed', page.locator('.jp-ThinkApps'));
  });

  test("the composer's Stop ends the app its run started", async () => {
    const s = await lab.api('POST', 'sessions', { title: 'Stop apps' });
    await page.evaluate(
      id => window.localStorage.setItem('think:last-session', id),
      s.id
    );
    await reopen();
    await openChat(page);
    await page.waitForFunction(
      id => document.querySelector('.jp-ThinkSessions-select')?.value === id,
      s.id,
      { timeout: TIMEOUT }
    );
    // The run serves an app, then its next step waits on the model.
    await lab.scriptReplies([
      {
        text: 'Serving the folder.',
        tool_calls: [
          ['serve_app', { command: 'python3 -m think_app .', name: 'stopme' }]
        ]
      },
      { hang: true }
    ]);
    await lab.api('POST', `sessions/${s.id}/messages`, {
      content: 'serve the folder'
    });
    await page.waitForFunction(
      () =>
        document.querySelector('.jp-ThinkApps-line')?.textContent ===
        'stopme: running',
      null,
      { timeout: TIMEOUT }
    );
    const url = `${lab.url}/api/think/sessions/${s.id}/apps/stopme/`;
    const auth = { headers: { Authorization: `token ${lab.token}` } };
    assert.equal((await fetch(url, auth)).status, 200);

    // The person presses Stop: the run ends, and the app with it.
    await page.locator('.jp-ThinkComposer-stop').click();
    await page.waitForFunction(
      () =>
        /^stopme: stopped/.test(
          document.querySelector('.jp-ThinkApps-line')?.textContent ?? ''
        ),
      null,
      { timeout: TIMEOUT }
    );
    // The serve_app card says why, in place of its "Open app".
    const ended = page.locator('.jp-ThinkToolCard-appEnded');
    await ended.waitFor({ timeout: TIMEOUT });
    assert.match(
      await ended.textContent(),
      /^stopme: stopped \(stopped with the run that started it \(Stop\)\)$/
    );
    assert.equal(await page.locator('.jp-ThinkToolCard-openApp').count(), 0);
    const listed = await lab.api('GET', `sessions/${s.id}/apps`);
    assert.equal(listed.apps[0].state, 'stopped');
    assert.equal((await fetch(url, auth)).status, 404);
    await shot(page, 'app-stopped-with-run', page.locator('.jp-ThinkChat'));
  });
});
