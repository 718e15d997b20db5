/**
 * The session's background jobs in the chat sidebar: each job's progress (the last
 * percentage it printed, its lines, the time it has run) with a Stop, and how the ones
 * that ended lately ended.
 *
 * Read from `GET .../jobs` when the session opens, then from the session's `jobs` frames
 * (sent by its kernel on each change). Stop asks `POST .../jobs/stop`; the next frame
 * says how the job ended.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import React, { useEffect, useState } from 'react';

import type { ChatStore } from './store';

/** One job as the server describes it. */
export interface IJob {
  name: string;
  state: string;
  started_at: number;
  ended_at?: number | null;
  elapsed: number;
  lines: number;
  percent?: number | null;
  exit_code?: number | null;
  error?: string;
}

/** Ended jobs stay listed this long (seconds). */
const SHOW_ENDED_S = 600;

/** A duration as `42 s`, `3 min 5 s` or `2 h 10 min`. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) {
    return `${s} s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min ${s % 60} s`;
  }
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** The jobs to show at `now` (epoch seconds): running ones and those ended lately. */
export function shownJobs(jobs: IJob[], now: number): IJob[] {
  return jobs.filter(
    j => j.state === 'running' || (j.ended_at ?? 0) > now - SHOW_ENDED_S
  );
}

/** One job's line: its name, state, progress, lines and time (`now`: epoch seconds). */
export function jobLine(j: IJob, now: number): string {
  const running = j.state === 'running';
  const took = running ? now - j.started_at : j.elapsed;
  const parts = [`${j.lines} line${j.lines === 1 ? '' : 's'}`, duration(took)];
  if (typeof j.percent === 'number') {
    parts.unshift(`${j.percent}%`);
  }
  let state = j.state;
  if (!running && j.exit_code !== null && j.exit_code !== undefined) {
    state += ` (exit ${j.exit_code})`;
  }
  return `${j.name}: ${state} · ${parts.join(' · ')}`;
}

function jobsUrl(settings: ServerConnection.ISettings, sid: string): string {
  return URLExt.join(
    settings.baseUrl,
    'api',
    'think',
    'sessions',
    encodeURIComponent(sid),
    'jobs'
  );
}

/** The jobs area: nothing while the session has no job to show. */
export function JobsStrip(props: {
  store: ChatStore;
  sessionId: string;
  settings?: ServerConnection.ISettings;
}): JSX.Element | null {
  const { store, sessionId } = props;
  const settings = props.settings ?? ServerConnection.makeSettings();
  const [jobs, setJobs] = useState<IJob[]>([]);
  const [now, setNow] = useState(Date.now() / 1000);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    setJobs([]);
    setError(null);
    void ServerConnection.makeRequest(
      jobsUrl(settings, sessionId),
      {},
      settings
    )
      .then(async r => (r.ok ? ((await r.json()).jobs as IJob[]) : []))
      .then(found => {
        if (live) {
          setJobs(found);
        }
      })
      .catch(() => undefined); // the frames still come
    const onFrame = (_: unknown, frame: { type: string }): void => {
      const f = frame as { type: string; session_id?: string; jobs?: IJob[] };
      if (f.type === 'jobs' && Array.isArray(f.jobs)) {
        setJobs(f.jobs);
      }
    };
    store.frameReceived.connect(onFrame);
    return () => {
      live = false;
      store.frameReceived.disconnect(onFrame);
    };
  }, [store, sessionId]);

  const running = jobs.some(j => j.state === 'running');
  useEffect(() => {
    if (!running) {
      return;
    }
    const timer = window.setInterval(() => setNow(Date.now() / 1000), 1000);
    return () => window.clearInterval(timer);
  }, [running]);

  const shown = shownJobs(jobs, now);
  if (!shown.length) {
    return null;
  }
  const stop = async (name: string): Promise<void> => {
    setError(null);
    const init = { method: 'POST', body: JSON.stringify(name ? { name } : {}) };
    try {
      const r = await ServerConnection.makeRequest(
        URLExt.join(jobsUrl(settings, sessionId), 'stop'),
        init,
        settings
      );
      if (!r.ok) {
        setError(((await r.json()) as { message?: string }).message ?? '');
      }
    } catch (e) {
      setError(String(e));
    }
  };
  const runningCount = shown.filter(j => j.state === 'running').length;
  return (
    <div className="jp-ThinkJobs" aria-label="Background jobs">
      {shown.map(j => (
        <div
          key={j.name}
          className="jp-ThinkJobs-job"
          data-state={j.state}
          title={j.error || undefined}
        >
          <span className="jp-ThinkJobs-line">{jobLine(j, now)}</span>
          {typeof j.percent === 'number' && j.state === 'running' ? (
            <progress
              className="jp-ThinkJobs-bar"
              max={100}
              value={j.percent}
            />
          ) : null}
          {j.state === 'running' ? (
            <button
              className="jp-ThinkJobs-stop"
              onClick={() => void stop(j.name)}
              title={`Stop the job ${j.name}`}
            >
              Stop
            </button>
          ) : null}
        </div>
      ))}
      {runningCount > 1 ? (
        <button className="jp-ThinkJobs-stopAll" onClick={() => void stop('')}>
          Stop all jobs
        </button>
      ) : null}
      {error ? (
        <div className="jp-ThinkJobs-error" role="alert">
          {error}
        </div>
      ) : null}
    </div>
  );
}
