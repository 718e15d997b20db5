// @vitest-environment jsdom
import { ServerConnection } from '@jupyterlab/services';
import { Signal } from '@lumino/signaling';
import React, { act } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { duration, IJob, jobLine, JobsStrip, shownJobs } from '../src/jobsView';
import { IReminderFrame, reminderText, takeFrame } from '../src/reminders';
import type { ChatStore } from '../src/store';
import { click, IMounted, mount, settle } from './render';

const frame: IReminderFrame = {
  type: 'job',
  key: 'sch_9:1700000000',
  session_id: 's1',
  session_title: 'Training',
  name: 'train',
  state: 'done',
  message:
    "Background job 'train' ended (done, exit code 0) after 181 s and 720 lines of output.",
  fired_at: 1700000005
};

const running: IJob = {
  name: 'train',
  state: 'running',
  started_at: 1000,
  elapsed: 5,
  lines: 12,
  percent: 42
};

let m: IMounted | null = null;
afterEach(() => {
  m?.unmount();
  m = null;
});

describe('job notifications', () => {
  it('show a job end once, naming its session', () => {
    const first = takeFrame({ since: 0, seen: [] }, frame as never);
    expect(first.show?.key).toBe(frame.key);
    expect(takeFrame(first.memory, frame as never).show).toBeNull();
    expect(reminderText(frame)).toBe(`Think (Training): ${frame.message}`);
  });
});

describe('the jobs area', () => {
  it('says each job in one line', () => {
    expect(duration(42)).toBe('42 s');
    expect(duration(185)).toBe('3 min 5 s');
    expect(duration(7800)).toBe('2 h 10 min');
    expect(jobLine(running, 1065)).toBe(
      'train: running · 42% · 12 lines · 1 min 5 s'
    );
    const ended = {
      ...running,
      state: 'failed',
      exit_code: 2,
      percent: null,
      ended_at: 2000
    };
    expect(jobLine(ended, 5000)).toBe(
      'train: failed (exit 2) · 12 lines · 5 s'
    );
    expect(shownJobs([running, ended], 2100)).toHaveLength(2);
    expect(shownJobs([running, ended], 9999)).toEqual([running]);
  });

  it('reads the jobs, follows the frames and stops a job', async () => {
    const calls: { url: string; method: string; body: string }[] = [];
    const fetch = vi.fn(async (req: RequestInfo, init?: RequestInit) => {
      const url = (typeof req === 'string' ? req : req.url).split('?')[0];
      const method = (
        init?.method ??
        (req as Request).method ??
        'GET'
      ).toUpperCase();
      const body = init?.body
        ? String(init.body)
        : ((await (req as Request).text?.()) ?? '');
      calls.push({ url, method, body });
      const answer = url.endsWith('/stop')
        ? { sent: true }
        : { jobs: [running] };
      return new Response(JSON.stringify(answer), {
        status: url.endsWith('/stop') ? 202 : 200
      });
    });
    const settings = ServerConnection.makeSettings({
      baseUrl: 'http://h/',
      fetch: fetch as never
    });
    const store = { frameReceived: new Signal<unknown, { type: string }>({}) };
    m = mount(
      React.createElement(JobsStrip, {
        store: store as unknown as ChatStore,
        sessionId: 's1',
        settings
      })
    );
    await settle();
    expect(calls[0].url).toBe('http://h/api/think/sessions/s1/jobs');
    const line = () =>
      m!.container.querySelector('.jp-ThinkJobs-line')?.textContent;
    expect(line()).toMatch(/^train: running · 42% · 12 lines · /);
    expect(m.container.querySelector('progress')?.getAttribute('value')).toBe(
      '42'
    );

    click(m.container.querySelector('.jp-ThinkJobs-stop')!);
    await settle();
    expect(calls[1]).toEqual({
      url: 'http://h/api/think/sessions/s1/jobs/stop',
      method: 'POST',
      body: '{"name":"train"}'
    });

    const now = Date.now() / 1000;
    const stopped = {
      ...running,
      state: 'stopped',
      ended_at: now,
      percent: 50
    };
    act(() =>
      store.frameReceived.emit({ type: 'jobs', jobs: [stopped] } as never)
    );
    expect(line()).toMatch(/^train: stopped · 50% · 12 lines · 5 s$/);
    expect(m.container.querySelector('.jp-ThinkJobs-stop')).toBeNull();
    act(() => store.frameReceived.emit({ type: 'jobs', jobs: [] } as never));
    expect(m.container.querySelector('.jp-ThinkJobs')).toBeNull();
  });
});
