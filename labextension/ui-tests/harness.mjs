/**
 * Start a real `jupyter lab` and a headless Chromium for the browser tests.
 *
 * Backend: the real `jupyter_ext` server extension, real think kernels and the real store;
 * only the model is scripted (tests/fake_model.py, driven by ui-tests/fake_model_driver.py).
 */

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const extDir = path.resolve(here, '..');
export const repoDir = path.resolve(extDir, '..');
export const shotsDir = path.resolve(
  process.env.THINK_E2E_SHOTS ?? path.join(extDir, 'ui-tests', 'screenshots')
);

/** How long a stopped server may take to exit (ms). */
const STOP_GRACE = 30000;

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--no-first-run',
  '--disable-quic',
  '--disable-component-update',
  '--disable-sync'
];

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

function extensionInstalled(env) {
  const r = spawnSync('jupyter', ['labextension', 'list'], {
    env,
    encoding: 'utf8'
  });
  return `${r.stdout}${r.stderr}`.includes('@think/jupyter-think');
}

/**
 * Start `jupyter lab`; resolves when it answers `/api/status`. `configured: false` starts
 * the scripted model but gives the server no endpoint (a new user's first start): the
 * tests then enter `lab.modelUrl` in the setup card. `kernelConfig`: the text of
 * think_kernel_config.py, written before the server starts its first spare kernel.
 */
/**
 * Tracebacks logged by upstream code for a tab that closes or reloads, which our code cannot
 * reach: jupyter_server's kernel WebSocket fails in `select_subprotocol` when a page connects
 * to a kernel that is shutting down (its `connection` is None), and jupyter_server_ydoc's
 * `YDocWebSocketHandler.send` logs every write to a room client that has gone (or, when the
 * write fails later, leaves its future unread).
 */
export const UPSTREAM_TRACEBACKS = [
  /'NoneType' object has no attribute 'kernel_ws_protocol'/,
  /\] Failed to write message\n[\s\S]*jupyter_server_ydoc\/handlers\.py/,
  // jupyter_server's kernel channels handler and jupyter_server_ydoc's room `send` write
  // without reading the write's future; a tab closed while the kernel or the room still
  // sends leaves this after "Starting buffering" (a kernel tab) or "Cleaning room" (the
  // room's last tab gone). Only tornado's frames: one of ours in it is still reported.
  /\] (?:Starting buffering for|Cleaning room:) [\s\S]*Task exception was never retrieved\nfuture: <Task finished name='Task-\d+' coro=<WebSocketProtocol13\.write_message\.<locals>\.wrapper\(\)[^\n]*\nTraceback(?:(?!\n {2}File "(?![^"]*\/tornado\/))[\s\S])*tornado\.websocket\.WebSocketClosedError\s*$/
];

/**
 * The tracebacks in a Jupyter server log, each with the log line that introduced it;
 * those matching a regex of `allow` are left out (a test that provokes one on purpose).
 */
export function serverTracebacks(text, allow = UPSTREAM_TRACEBACKS) {
  const lines = text.split('\n');
  const found = [];
  lines.forEach((line, i) => {
    if (!line.includes('Traceback (most recent call last)')) {
      return;
    }
    let start = i;
    while (start > 0 && !/^\[[A-Z] /.test(lines[start])) {
      start--;
    }
    let end = i + 1;
    while (end < lines.length && !/^\[[A-Z] /.test(lines[end])) {
      end++;
    }
    const block = lines.slice(start, end).join('\n');
    if (!allow.some(re => re.test(block)) && !found.includes(block)) {
      found.push(block);
    }
  });
  return found;
}

export async function startLab({
  backend = 'real',
  env: extra = {},
  configured = true,
  allowTracebacks = [],
  kernelConfig
} = {}) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'think-e2e-'));
  const root = path.join(tmp, 'root');
  fs.mkdirSync(root);
  fs.writeFileSync(
    path.join(root, 'notes.md'),
    '# Notes\n\nHello from notes.\n'
  );
  const port = await freePort();
  const token = 'e2e-' + Math.random().toString(16).slice(2);
  const env = {
    ...process.env,
    ...extra,
    JUPYTER_CONFIG_DIR: path.join(tmp, 'config'),
    JUPYTER_RUNTIME_DIR: path.join(tmp, 'runtime')
  };
  // Without the Python package installed, point Jupyter at the built extension.
  if (!extensionInstalled(env)) {
    const share = path.join(tmp, 'share', 'jupyter');
    const dest = path.join(share, 'labextensions', '@think');
    fs.mkdirSync(dest, { recursive: true });
    fs.symlinkSync(
      path.join(repoDir, 'jupyter_ext', 'labextension'),
      path.join(dest, 'jupyter-think')
    );
    env.JUPYTER_PATH = [share, process.env.JUPYTER_PATH]
      .filter(Boolean)
      .join(path.delimiter);
  }
  const args = [
    'lab',
    '--allow-root',
    '--no-browser',
    '--ServerApp.ip=127.0.0.1',
    `--IdentityProvider.token=${token}`,
    `--ServerApp.root_dir=${root}`,
    '--LabApp.news_url=',
    '--LabServerApp.workspaces_dir=' + path.join(tmp, 'workspaces')
  ];
  // No news pop-up over the chat in screenshots.
  fs.mkdirSync(path.join(env.JUPYTER_CONFIG_DIR, 'labconfig'), {
    recursive: true
  });
  fs.writeFileSync(
    path.join(env.JUPYTER_CONFIG_DIR, 'labconfig', 'page_config.json'),
    JSON.stringify({
      disabledExtensions: {
        '@jupyterlab/apputils-extension:announcements': true
      }
    })
  );
  // Before the server starts: the spare kernel it starts while loading reads it too.
  if (kernelConfig !== undefined) {
    fs.writeFileSync(
      path.join(env.JUPYTER_CONFIG_DIR, 'think_kernel_config.py'),
      kernelConfig
    );
  }
  let model = null;
  if (backend === 'real') {
    // The repository's packages and the `think` kernel spec, installed or not.
    env.PYTHONPATH = [repoDir, process.env.PYTHONPATH]
      .filter(Boolean)
      .join(path.delimiter);
    const share = path.join(tmp, 'kshare', 'jupyter');
    fs.mkdirSync(path.join(share, 'kernels', 'think'), { recursive: true });
    const spec = JSON.parse(
      fs.readFileSync(
        path.join(repoDir, 'think_kernel', 'kernelspec', 'kernel.json'),
        'utf8'
      )
    );
    spec.env = { ...(spec.env ?? {}), PYTHONPATH: repoDir };
    fs.writeFileSync(
      path.join(share, 'kernels', 'think', 'kernel.json'),
      JSON.stringify(spec)
    );
    env.JUPYTER_PATH = [share, env.JUPYTER_PATH]
      .filter(Boolean)
      .join(path.delimiter);
    model = await startFakeModel();
    if (configured) {
      env.OPENAI_BASE_URL = model.modelUrl;
      env.OPENAI_API_KEY = 'fake-key';
      env.THINK_MODEL = 'fake-model';
    } else {
      for (const name of ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'THINK_MODEL']) {
        delete env[name];
      }
    }
    fs.writeFileSync(path.join(root, 'analysis.ipynb'), EMPTY_NOTEBOOK);
    fs.mkdirSync(env.JUPYTER_CONFIG_DIR, { recursive: true });
    fs.writeFileSync(
      path.join(env.JUPYTER_CONFIG_DIR, 'jupyter_server_config.json'),
      JSON.stringify({
        ServerApp: { jpserver_extensions: { jupyter_ext: true } }
      })
    );
  }
  let proc = null;
  let url = null;
  // Start the server on `at` and wait until it answers; the log is appended to, so a
  // restarted server's lines follow the first one's.
  const launch = async (at, extraArgs = []) => {
    const log = fs.openSync(path.join(tmp, 'lab.log'), 'a');
    proc = spawn('jupyter', [...args, `--port=${at}`, ...extraArgs], {
      env,
      cwd: root,
      stdio: ['ignore', log, log],
      detached: true
    });
    fs.closeSync(log); // the server has its own copy
    url = `http://127.0.0.1:${at}`;
    const deadline = Date.now() + 60000;
    for (;;) {
      if (proc.exitCode !== null) {
        throw new Error(
          `jupyter lab exited: ${fs.readFileSync(path.join(tmp, 'lab.log'), 'utf8')}`
        );
      }
      try {
        const r = await fetch(`${url}/api/status?token=${token}`);
        if (r.ok) {
          break;
        }
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        throw new Error('jupyter lab did not start in 60 s');
      }
      await new Promise(r => setTimeout(r, 250));
    }
  };
  // SIGTERM to the server's process group, as a person's Ctrl-C or `jupyter server stop`.
  // A server that does not exit is a failure of the test that stops it (its log says why),
  // not a run that waits for ever: after STOP_GRACE it is killed and the stop throws.
  const halt = async () => {
    try {
      process.kill(-proc.pid, 'SIGTERM');
    } catch {
      // already gone
    }
    const exited = new Promise(r =>
      proc.exitCode !== null ? r(true) : proc.once('exit', () => r(true))
    );
    let timer;
    const late = new Promise(r => {
      timer = setTimeout(() => r(false), STOP_GRACE);
    });
    const stopped = await Promise.race([exited, late]);
    clearTimeout(timer);
    if (!stopped) {
      try {
        process.kill(-proc.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
      await exited;
      throw new Error(
        `jupyter lab did not exit within ${STOP_GRACE / 1000} s of SIGTERM; its log:\n` +
          fs.readFileSync(path.join(tmp, 'lab.log'), 'utf8').slice(-4000)
      );
    }
  };
  await launch(port);
  return {
    url,
    token,
    root,
    tmp,
    configDir: env.JUPYTER_CONFIG_DIR,
    backend,
    modelUrl: model?.modelUrl ?? null,
    log: path.join(tmp, 'lab.log'),
    /** REST call with the token, for test setup. */
    async api(method, route, body) {
      const r = await fetch(`${url}/api/think/${route}`, {
        method,
        headers: {
          Authorization: `token ${token}`,
          'Content-Type': 'application/json'
        },
        body: body === undefined ? undefined : JSON.stringify(body)
      });
      const text = await r.text();
      if (!r.ok) {
        throw new Error(`${method} ${route}: ${r.status} ${text}`);
      }
      return text ? JSON.parse(text) : null;
    },
    /** Queue the fake model's replies for a scenario. */
    async script(kind) {
      if (model) {
        await model.script(SCRIPTS[kind]);
      }
    },
    /** Queue these replies of the fake model (`tool_calls` as `[[name, args], ...]`). */
    async scriptReplies(replies) {
      await model.script(replies);
    },
    /** Answer every internal call of `purpose` (e.g. `complete`) with this reply. */
    async answer(purpose, reply) {
      await model.answer(purpose, reply);
    },
    /** What the fake model recorded (real backend), or null. */
    async modelStats() {
      return model ? model.stats() : null;
    },
    /**
     * In an `afterEach`: when the test failed, print the end of the server's log and what
     * the fake model was asked, so a failure on CI can be read from its output alone.
     */
    async reportFailure(t) {
      if (t.passed) {
        return;
      }
      const lines = fs
        .readFileSync(path.join(tmp, 'lab.log'), 'utf8')
        .split('\n');
      const asked = model ? (await model.stats()).requests.length : null;
      let events = '';
      try {
        const { sessions } = await this.api('GET', 'sessions');
        const sid = sessions[0]?.id;
        const { events: rows } = await this.api(
          'GET',
          `sessions/${sid}/events`
        );
        events = rows
          .slice(-40)
          .map(e => JSON.stringify(e).slice(0, 300))
          .join('\n');
        events = `the last events of session ${sid}:\n${events}\n`;
      } catch (e) {
        events = `(events not read: ${e})\n`;
      }
      process.stderr.write(
        `--- "${t.name}" failed; model requests so far: ${asked}; ` +
          `the last ${Math.min(lines.length, 150)} lines of the server log:\n` +
          `${lines.slice(-150).join('\n')}\n${events}--- end of the report\n`
      );
    },
    /**
     * Stop the server and start it again with the same root, token, Jupyter folders and
     * model, on `port` (by default the one it had; a busy port fails the start rather
     * than moving elsewhere); `url` then names the new server.
     */
    async restart({ port: at = new URL(url).port } = {}) {
      await halt();
      await launch(at, ['--ServerApp.port_retries=0']);
      this.url = url;
    },
    /**
     * Stop the server; with `check` (the default), throw if its log has a traceback:
     * normal use must not leave one, so the test file fails.
     */
    async stop({ check = true } = {}) {
      model?.stop();
      await halt();
      const text = fs.readFileSync(path.join(tmp, 'lab.log'), 'utf8');
      const allow = [...UPSTREAM_TRACEBACKS, ...allowTracebacks];
      const found = check ? serverTracebacks(text, allow) : [];
      if (found.length) {
        throw new Error(
          `the Jupyter server logged ${found.length} traceback(s):\n` +
            found.join('\n---\n')
        );
      }
    }
  };
}

const EMPTY_NOTEBOOK = JSON.stringify({
  cells: [],
  metadata: {},
  nbformat: 4,
  nbformat_minor: 5
});

/**
 * The text of a notebook of code cells (`sources`) on the `think` kernel, for `files` of
 * launchLab: a notebook that names its kernel opens without a kernel dialog.
 */
export function notebookText(sources = [''], kernel = 'think') {
  return JSON.stringify({
    cells: sources.map(source => ({
      cell_type: 'code',
      execution_count: null,
      metadata: {},
      outputs: [],
      source
    })),
    metadata: { kernelspec: { name: kernel, display_name: kernel } },
    nbformat: 4,
    nbformat_minor: 5
  });
}

const words = (prefix, n) =>
  Array.from({ length: n }, (_, i) => `${i ? ' ' : ''}${prefix}${i}`);

/**
 * The fake model's replies for each scenario of the tests (real backend). Chunks are
 * 20 ms apart, so the tests can see text stream.
 */
export const SCRIPTS = {
  hello: [
    {
      text: 'Hello! I am **Think**, a coding agent. Ask me to read, write or run code.',
      delay: 0.02
    }
  ],
  tool: [
    {
      reasoning: 'The user wants an answer. ',
      text: 'Let me list the files first.',
      delay: 0.02,
      tool_calls: [['bash', { command: 'sleep 1; ls' }]]
    },
    {
      text: 'There are two files: `notes.md` and `analysis.ipynb`.',
      delay: 0.02
    }
  ],
  fail: [
    {
      text: 'Let me list the files first.',
      delay: 0.02,
      tool_calls: [['bash', { command: 'false' }]]
    },
    { text: 'The command failed.', delay: 0.02 }
  ],
  slow: [{ tokens: words('word', 400), delay: 0.02 }],
  unauthorized: [{ error: 401, error_message: 'Incorrect API key provided' }],
  long: [
    {
      tokens: [
        "Here is some code:\n\n```python\nprint('hello')\n```\n\n",
        ...words('t', 120)
      ],
      delay: 0.02
    }
  ]
};

/** Start tests/fake_model.py through ui-tests/fake_model_driver.py. */
async function startFakeModel() {
  const proc = spawn('python3', [path.join(here, 'fake_model_driver.py')], {
    stdio: ['pipe', 'pipe', 'inherit']
  });
  const line = await new Promise((resolve, reject) => {
    let buf = '';
    proc.stdout.on('data', d => {
      buf += d;
      if (buf.includes('\n')) {
        resolve(buf.split('\n')[0]);
      }
    });
    proc.once('exit', code => reject(new Error(`fake model exited ${code}`)));
  });
  const { model_url: modelUrl, control_url: controlUrl } = JSON.parse(line);
  return {
    modelUrl,
    async script(replies) {
      const r = await fetch(`${controlUrl}/script`, {
        method: 'POST',
        body: JSON.stringify(replies)
      });
      if (!r.ok) {
        throw new Error(`scripting the fake model failed: ${r.status}`);
      }
    },
    async answer(purpose, reply) {
      const r = await fetch(`${controlUrl}/answer`, {
        method: 'POST',
        body: JSON.stringify({ purpose, ...reply })
      });
      if (!r.ok) {
        throw new Error(`setting the fake model's answer failed: ${r.status}`);
      }
    },
    async stats() {
      const r = await fetch(`${controlUrl}/requests`);
      return r.json();
    },
    stop() {
      proc.stdin.end();
    }
  };
}

/** Launch the system Chromium. */
export function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: CHROMIUM_ARGS
  });
}

/** Open JupyterLab in a new page and wait for the Think sidebar. */
export async function openLab(context, lab, { colorScheme } = {}) {
  const page = await context.newPage();
  if (colorScheme) {
    await page.emulateMedia({ colorScheme });
  }
  await page.goto(`${lab.url}/lab?token=${lab.token}&reset`);
  await page.waitForSelector('#jp-main-dock-panel', { timeout: 60000 });
  return page;
}

/**
 * Open JupyterLab in a new page with a file of the server's root in an editor tab
 * (`/lab/tree/<name>`); resolves with the editor once it shows the file.
 */
export async function openFile(context, lab, name) {
  const page = await context.newPage();
  await page.goto(`${lab.url}/lab/tree/${name}?token=${lab.token}&reset`);
  const editor = page.locator('.jp-FileEditor .cm-content').first();
  await editor.waitFor({ state: 'visible', timeout: 60000 });
  return { page, editor };
}

/**
 * Open JupyterLab in a new page with a notebook of the server's root open
 * (`/lab/tree/<name>`); resolves with the page once the notebook shows a cell.
 */
export async function openNotebook(context, lab, name) {
  const page = await context.newPage();
  await page.goto(`${lab.url}/lab/tree/${name}?token=${lab.token}&reset`);
  await page
    .locator('.jp-NotebookPanel .jp-Cell')
    .first()
    .waitFor({ state: 'visible', timeout: 60000 });
  return page;
}

/**
 * Wait until the open notebook's kernel is up: the status bar shows "<kernel> | Idle". A
 * cell run before then is dropped by JupyterLab (its session has no kernel to send it to
 * yet, so the cell is left without a count), as it would be for a person. A status of
 * "No Kernel" never counts.
 */
export async function kernelIdle(page, timeout = 90000) {
  await page
    .getByText(/^(?!No Kernel).+ \| Idle$/)
    .first()
    .waitFor({ timeout });
}

/**
 * Wait for `locator` to be visible; when it is not in time, the error says why: the first of
 * its ancestors that hides it (display, visibility, zero size, a hidden Lumino widget) and
 * which main-area tab is in front, so a failure on CI explains itself.
 */
export async function waitVisible(locator, timeout = 90000) {
  try {
    await locator.waitFor({ state: 'visible', timeout });
  } catch (e) {
    const why = await locator
      .evaluate(el => {
        const out = [];
        for (let n = el; n && n !== document.body; n = n.parentElement) {
          const s = window.getComputedStyle(n);
          const box = n.getBoundingClientRect();
          const hides =
            s.display === 'none' ||
            s.visibility === 'hidden' ||
            s.contentVisibility === 'hidden' ||
            box.width === 0 ||
            box.height === 0 ||
            n.classList.contains('lm-mod-hidden');
          if (hides) {
            out.push(
              `${n.tagName.toLowerCase()}#${n.id}.${[...n.classList].join('.')} ` +
                `display=${s.display} size=${box.width}x${box.height}`
            );
          }
        }
        const front = [
          ...document.querySelectorAll(
            '#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current'
          )
        ].map(t => t.textContent);
        return `hidden by: ${out.join(' < ') || 'nothing'}; main tabs in front: ${JSON.stringify(front)}`;
      })
      .catch(err => `(not explained: ${err})`);
    throw new Error(`${e.message}\n${why}`);
  }
}

/** Show the sidebar until `shown` (a locator inside it) is visible. */
async function showSidebar(page, shown) {
  const tab = page.locator('.jp-SideBar [data-id="think-chat"]');
  await tab.waitFor();
  // The tab toggles the sidebar, and a layout restored late may open it too: click only
  // when it is hidden, and again if the restore closed what the click opened.
  for (let i = 0; i < 3; i++) {
    if (!(await shown.isVisible())) {
      await tab.click();
    }
    try {
      await shown.waitFor({ state: 'visible', timeout: 5000 });
      return;
    } catch {
      // toggled shut by a late layout restore: try again
    }
  }
  throw new Error('the Think sidebar did not open');
}

/** Show the chat sidebar and wait for its composer. */
export async function openChat(page) {
  await showSidebar(
    page,
    page.locator('.jp-ThinkChat .jp-ThinkComposer-input')
  );
}

/** Show the sidebar, whatever it shows (the setup card has no composer). */
export async function openSidebar(page) {
  await showSidebar(page, page.locator('.jp-ThinkChat .jp-ThinkChat-header'));
}

/**
 * The set-up of a browser test in one call: `jupyter lab` (see startLab), a headless
 * Chromium, a browser context and a JupyterLab page. Resolves with
 * `{lab, browser, context, page, close}`; `close()` stops the browser, then the server.
 * When the set-up fails half-way, what it started is stopped before the error is thrown.
 *
 * Options: those of startLab (`backend`, `env`, `configured`), and
 * - `files`: `{name: text}` written to the server's root before the page opens;
 * - `kernelConfig`: the text of think_kernel_config.py (kernels read it as they start);
 * - `labSettings`: `{'@jupyterlab/notebook-extension:tracker': {...}}`, user settings;
 * - `viewport` (1400 x 900 unless given), `colorScheme`, `permissions` (granted for the
 *   server's origin);
 * - `beforePage(ui)`: runs once the context exists, before the page opens (listeners);
 * - `page: false`: no page (the test opens its own, e.g. with openFile);
 * - `notebook`: open this notebook of the root rather than the bare workspace (one that
 *   names its kernel, see notebookText, or JupyterLab asks for one in a dialog);
 * - `sidebar: true`: open the chat sidebar and wait for its composer.
 */
export async function launchLab({
  files = {},
  kernelConfig,
  labSettings = {},
  viewport = { width: 1400, height: 900 },
  colorScheme,
  permissions = [],
  beforePage,
  page: withPage = true,
  notebook,
  sidebar = false,
  ...server
} = {}) {
  const lab = await startLab({ ...server, kernelConfig });
  let browser = null;
  const close = async ({ check = true } = {}) => {
    await browser?.close();
    await lab.stop({ check });
  };
  try {
    for (const [name, text] of Object.entries(files)) {
      const file = path.join(lab.root, name);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, text);
    }
    for (const [id, values] of Object.entries(labSettings)) {
      const [pkg, plugin] = id.split(':');
      const dir = path.join(lab.configDir, 'lab', 'user-settings', pkg);
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(
        path.join(dir, `${plugin}.jupyterlab-settings`),
        JSON.stringify(values)
      );
    }
    browser = await launchBrowser();
    const context = await browser.newContext({ viewport });
    if (permissions.length) {
      await context.grantPermissions(permissions, { origin: lab.url });
    }
    const ui = { lab, browser, context, page: null, close };
    await beforePage?.(ui);
    if (withPage) {
      ui.page = notebook
        ? await openNotebook(context, lab, notebook)
        : await openLab(context, lab, { colorScheme });
      if (colorScheme && notebook) {
        await ui.page.emulateMedia({ colorScheme });
      }
      if (sidebar) {
        await openChat(ui.page);
      }
    }
    return ui;
  } catch (e) {
    await close({ check: false }); // the error that stopped the start is the one to see
    throw e;
  }
}

/** Save a screenshot under ui-tests/screenshots. */
export async function shot(page, name, locator) {
  fs.mkdirSync(shotsDir, { recursive: true });
  const file = path.join(shotsDir, `${name}.png`);
  await (locator ?? page).screenshot({ path: file });
  return file;
}
