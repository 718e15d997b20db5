// @vitest-environment jsdom
import { ServerConnection } from '@jupyterlab/services';
import { Signal } from '@lumino/signaling';
import type { Widget } from '@lumino/widgets';
import React, { act } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import {
  appOfToolCall,
  AppsModel,
  appUrl,
  openUrl,
  type IApp,
  type IFrameSource
} from '../src/apps';
import { APP_SANDBOX, AppFrame, AppTabs } from '../src/appTab';
import { AppsContext, AppsStrip, OpenAppButton } from '../src/appsView';
import { click, IMounted, mount, settle } from './render';

const web: IApp = {
  name: 'web',
  url: '/api/think/sessions/s1/apps/web/',
  state: 'running',
  command: 'python3 -m http.server $PORT',
  started_at: 1000,
  exit_code: null,
  log_tail: 'Serving HTTP'
};

/** A server answering the apps routes; `rows` is what GET lists. */
function server(rows: IApp[]) {
  const calls: { url: string; method: string; body?: unknown }[] = [];
  const fetch = vi.fn(async (req: RequestInfo, init?: RequestInit) => {
    const url = (typeof req === 'string' ? req : req.url).split('?')[0];
    const method = (
      init?.method ??
      (req as Request).method ??
      'GET'
    ).toUpperCase();
    if (method !== 'POST') {
      calls.push({ url, method });
      return new Response(JSON.stringify({ apps: rows }));
    }
    const text =
      typeof init?.body === 'string'
        ? init.body
        : await (req as Request).text();
    const body = JSON.parse(text) as { action: string; name?: string };
    calls.push({ url, method, body });
    const named = (r: IApp): boolean => !body.name || r.name === body.name;
    if (body.action === 'stop') {
      const stopped = rows.filter(r => named(r) && r.state === 'running');
      rows.splice(
        0,
        rows.length,
        ...rows.map(r => (stopped.includes(r) ? { ...r, state: 'stopped' } : r))
      );
      return new Response(
        JSON.stringify({ stopped: stopped.map(r => r.name), apps: rows })
      );
    }
    const i = rows.findIndex(named);
    const row = { ...rows[i], state: 'running', started_at: 2000 };
    rows.splice(i, 1, row);
    return new Response(JSON.stringify(row));
  });
  const settings = ServerConnection.makeSettings({
    baseUrl: 'http://h/',
    fetch: fetch as never
  });
  return { calls, settings };
}

function source(sessionId = 's1') {
  return {
    sessionId,
    frameReceived: new Signal<unknown, { type: string }>({})
  } satisfies IFrameSource;
}

let m: IMounted | null = null;
afterEach(() => {
  m?.unmount();
  m = null;
});

describe('the app a serve_app card names', () => {
  const call = {
    name: 'serve_app',
    status: 'complete' as const,
    input: { command: 'x', name: 'fromarg' },
    output: 'app web running at /api/think/sessions/s1/apps/web/'
  };

  it('comes from the structured result, else the path, else the argument', () => {
    const display = [{ app: { name: 'dash', url: '/x', state: 'running' } }];
    expect(appOfToolCall({ ...call, display }, 's1')).toEqual({
      sessionId: 's1',
      name: 'dash'
    });
    expect(appOfToolCall(call, 's1')).toEqual({ sessionId: 's1', name: 'web' });
    expect(appOfToolCall({ ...call, output: 'started' }, 's1')).toEqual({
      sessionId: 's1',
      name: 'fromarg'
    });
  });

  it('is none for other tools, failures and names unfit for a path', () => {
    expect(appOfToolCall({ ...call, name: 'bash' }, 's1')).toBeNull();
    expect(appOfToolCall({ ...call, status: 'error' }, 's1')).toBeNull();
    expect(appOfToolCall(call, null)).toBeNull();
    const bad = {
      ...call,
      input: { name: '../../etc' },
      output: 'see /api/think/sessions/s1/apps/..%2F..%2Fx/'
    };
    expect(appOfToolCall(bad, 's1')).toBeNull();
    // A path into another session is not this card's app.
    const other = {
      ...call,
      input: {},
      output: '/api/think/sessions/s2/apps/web/'
    };
    expect(appOfToolCall(other, 's1')).toBeNull();
  });

  it('opens at its keyed path when the server gives one for it', () => {
    const ref = { sessionId: 's1', name: 'web' };
    const keyed = {
      ...web,
      open_url: 'api/think/sessions/s1/apps/web/@k_3-x/'
    };
    expect(openUrl('http://h/', ref, keyed)).toBe(
      'http://h/api/think/sessions/s1/apps/web/@k_3-x/'
    );
    for (const open_url of [
      'api/think/sessions/s1/apps/other/@k/',
      'api/think/sessions/s2/apps/web/@k/',
      'api/think/sessions/s1/apps/web/@k/../../x/',
      'https://evil.example/',
      ''
    ]) {
      expect(openUrl('http://h/', ref, { ...web, open_url })).toBe(
        'http://h/api/think/sessions/s1/apps/web/'
      );
    }
    expect(openUrl('http://h/', ref)).toBe(
      'http://h/api/think/sessions/s1/apps/web/'
    );
  });

  it('is served under the session, whatever the text said', () => {
    expect(appUrl('http://h/base/', { sessionId: 's 1', name: 'web' })).toBe(
      'http://h/base/api/think/sessions/s%201/apps/web/'
    );
  });
});

describe('the apps model', () => {
  it('reads the list, follows frames and refetches after an app tool', async () => {
    const rows = [web];
    const { calls, settings } = server(rows);
    const src = source();
    const model = new AppsModel(src, settings);
    await model.open('s1');
    expect(calls[0]).toEqual({
      url: 'http://h/api/think/sessions/s1/apps',
      method: 'GET'
    });
    expect(model.apps).toEqual([web]);

    const crashed = { ...web, state: 'crashed', exit_code: 1 };
    src.frameReceived.emit({
      type: 'apps',
      session_id: 's1',
      apps: [crashed]
    } as never);
    expect(model.find('s1', 'web')?.state).toBe('crashed');
    // Another session's frame is not this list.
    src.frameReceived.emit({
      type: 'apps',
      session_id: 's2',
      apps: []
    } as never);
    expect(model.apps).toHaveLength(1);

    src.frameReceived.emit({ type: 'tool_result', name: 'serve_app' } as never);
    await settle();
    expect(calls).toHaveLength(2);
    expect(model.find('s1', 'web')?.state).toBe('running');
    model.dispose();
  });

  it('posts Stop, Stop all and Restart to the list, never below an app', async () => {
    const rows = [web, { ...web, name: 'other' }];
    const { calls, settings } = server(rows);
    const model = new AppsModel(source(), settings);
    await model.open('s1');
    await model.stop('web');
    // An app's own paths (.../apps/web/stop) are the app's: the controls are the list's.
    expect(calls[1]).toEqual({
      url: 'http://h/api/think/sessions/s1/apps',
      method: 'POST',
      body: { action: 'stop', name: 'web' }
    });
    expect(model.find('s1', 'web')?.state).toBe('stopped');
    expect(model.find('s1', 'other')?.state).toBe('running');
    await model.restart('web');
    expect(calls[3]).toEqual({
      url: 'http://h/api/think/sessions/s1/apps',
      method: 'POST',
      body: { action: 'restart', name: 'web' }
    });
    expect(model.find('s1', 'web')?.state).toBe('running');
    await model.stopAll();
    expect(calls[5].body).toEqual({ action: 'stop' });
    expect(model.apps.map(a => a.state)).toEqual(['stopped', 'stopped']);
    await expect(model.stop('../x')).rejects.toThrow(/no app/);
  });
});

describe('the apps list and the Open app button', () => {
  it('lists the apps with their state, Open, Stop, Restart and log', async () => {
    const rows: IApp[] = [
      web,
      { ...web, name: 'old', state: 'crashed', exit_code: 3 }
    ];
    const { calls, settings } = server(rows);
    const model = new AppsModel(source(), settings);
    const open = vi.fn();
    m = mount(
      <AppsContext.Provider value={{ model, open }}>
        <AppsStrip sessionId="s1" />
        <OpenAppButton
          call={{
            name: 'serve_app',
            status: 'complete' as const,
            output: 'app web at /api/think/sessions/s1/apps/web/'
          }}
        />
      </AppsContext.Provider>
    );
    await settle();
    const lines = [...m.container.querySelectorAll('.jp-ThinkApps-line')].map(
      e => e.textContent
    );
    expect(lines).toEqual(['web: running', 'old: crashed (exit 3)']);
    const [live, dead] = m.container.querySelectorAll('.jp-ThinkApps-app');
    expect(dead.getAttribute('data-state')).toBe('crashed');
    expect(dead.querySelector('.jp-ThinkApps-open')).toBeNull();
    expect(live.querySelector('pre')?.textContent).toBe('Serving HTTP');

    click(live.querySelector('.jp-ThinkApps-open')!);
    expect(open).toHaveBeenCalledWith({ sessionId: 's1', name: 'web' });
    click(m.container.querySelector('.jp-ThinkToolCard-openApp')!);
    expect(open).toHaveBeenCalledTimes(2);

    // One app runs: no Stop all.
    expect(m.container.querySelector('.jp-ThinkApps-stopAll')).toBeNull();
    click(live.querySelector('.jp-ThinkApps-stop')!);
    await settle();
    expect(calls.at(-2)?.body).toEqual({ action: 'stop', name: 'web' });
    expect(m.container.querySelector('.jp-ThinkApps-line')?.textContent).toBe(
      'web: stopped'
    );
    act(() => model.dispose());
  });

  it('offers Stop all apps while several run', async () => {
    const rows: IApp[] = [web, { ...web, name: 'api' }];
    const { calls, settings } = server(rows);
    const model = new AppsModel(source(), settings);
    m = mount(
      <AppsContext.Provider value={{ model, open: vi.fn() }}>
        <AppsStrip sessionId="s1" />
      </AppsContext.Provider>
    );
    await settle();
    const all = m.container.querySelector('.jp-ThinkApps-stopAll')!;
    expect(all.textContent).toBe('Stop all apps');
    click(all);
    await settle();
    expect(calls.at(-2)?.body).toEqual({ action: 'stop' });
    const lines = [...m.container.querySelectorAll('.jp-ThinkApps-line')].map(
      e => e.textContent
    );
    expect(lines).toEqual(['web: stopped', 'api: stopped']);
    expect(m.container.querySelector('.jp-ThinkApps-stopAll')).toBeNull();
    act(() => model.dispose());
  });

  it("says on the serve_app card that its app ended with the run's Stop", async () => {
    const why = 'stopped with the run that started it (Stop)';
    const rows: IApp[] = [{ ...web, state: 'stopped', error: why }];
    const { settings } = server(rows);
    const model = new AppsModel(source(), settings);
    m = mount(
      <AppsContext.Provider value={{ model, open: vi.fn() }}>
        <AppsStrip sessionId="s1" />
        {/* Cut by Stop while its app started: only its argument names the app. */}
        <OpenAppButton
          call={{
            name: 'serve_app',
            status: 'cancelled' as const,
            input: { command: 'x', name: 'web' }
          }}
        />
      </AppsContext.Provider>
    );
    await settle();
    expect(m.container.querySelector('.jp-ThinkToolCard-openApp')).toBeNull();
    expect(
      m.container.querySelector('.jp-ThinkToolCard-appEnded')?.textContent
    ).toBe(`web: stopped (${why})`);
    act(() => model.dispose());
  });
});

describe('an app tab', () => {
  // JupyterLab's toolbar watches its size; jsdom has no layout to watch.
  globalThis.ResizeObserver ??= class {
    observe(): void {}
    unobserve(): void {}
    disconnect(): void {}
  } as never;

  it('shows the app in a sandboxed iframe that cannot reach Lab', () => {
    const frame = new AppFrame({ sessionId: 's1', name: 'web' }, 'http://h/a/');
    const iframe = frame.node.querySelector('iframe')!;
    expect(iframe.getAttribute('sandbox')).toBe(APP_SANDBOX);
    expect(APP_SANDBOX.split(' ')).not.toContain('allow-same-origin');
    expect(iframe.getAttribute('src')).toBe('http://h/a/');
    const note = frame.node.querySelector(
      '.jp-ThinkAppFrame-note'
    ) as HTMLElement;
    frame.showApp(web);
    expect(note.hidden).toBe(true);
    frame.showApp({ ...web, state: 'stopped' });
    expect(note.hidden).toBe(false);
    expect(note.textContent).toMatch(/web stopped/);
    const reload = vi.spyOn(frame, 'reload');
    // Starting: not yet, it may not answer; running again: a fresh page.
    frame.showApp({ ...web, state: 'starting' });
    expect(reload).not.toHaveBeenCalled();
    expect(note.textContent).toMatch(/starting/);
    frame.showApp(web);
    expect(reload).toHaveBeenCalledTimes(1);
    expect(note.hidden).toBe(true);
  });

  it('opens one tab per app, titled with its name, and follows its state', async () => {
    const rows = [web];
    const { settings } = server(rows);
    const model = new AppsModel(source(), settings);
    await model.open('s1');
    const added: Widget[] = [];
    const tabs = new AppTabs(
      model,
      w => added.push(w),
      () => undefined
    );
    const tab = tabs.open({ sessionId: 's1', name: 'web' });
    expect(tab.title.label).toBe('web');
    expect(tab.content.url).toBe('http://h/api/think/sessions/s1/apps/web/');
    // The row's keyed path, once listed, is where the frame shows it.
    rows[0] = { ...web, open_url: 'api/think/sessions/s1/apps/web/@key/' };
    await model.refresh();
    expect(tab.content.url).toBe(
      'http://h/api/think/sessions/s1/apps/web/@key/'
    );
    expect([...tab.toolbar.names()]).toContain('reload');
    await model.stop('web');
    expect(tab.content.state).toBe('stopped');
    expect(tabs.open({ sessionId: 's1', name: 'web' })).toBe(tab);
    tab.dispose();
    expect(tabs.open({ sessionId: 's1', name: 'web' })).not.toBe(tab);
  });
});
