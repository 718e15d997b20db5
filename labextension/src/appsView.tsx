/**
 * The session's live apps in the chat sidebar (name, state, Open, Stop, Restart and the
 * tail of its log; "Stop all apps" while several run) and, on a `serve_app` tool card, the
 * "Open app" button while the app runs, or how it ended (stopped with its run's Stop).
 *
 * Both read the apps model (apps.ts) and open an app through the app tabs (appTab.ts),
 * which the chat panel hands down in `AppsContext`.
 */

import React, { createContext, useContext, useEffect, useState } from 'react';

import {
  appOfToolCall,
  isLive,
  type AppsModel,
  type IApp,
  type IAppRef,
  type IToolCallLike
} from './apps';

/** What the sidebar needs to show and open apps (null: apps are not offered). */
export interface IAppsContext {
  model: AppsModel;
  open: (ref: IAppRef) => void;
}

/** The apps model and the opener of app tabs, for the tool cards and the list. */
export const AppsContext = createContext<IAppsContext | null>(null);

/** The model's list, re-rendered on each change. */
function useApps(model: AppsModel): readonly IApp[] {
  const [apps, setApps] = useState(model.apps);
  useEffect(() => {
    const update = (): void => setApps(model.apps);
    update();
    model.changed.connect(update);
    return () => {
      model.changed.disconnect(update);
    };
  }, [model]);
  return apps;
}

/** One app's line: its name and state (with the exit code of one that ended). */
export function appLine(app: IApp): string {
  const code =
    !isLive(app.state) && typeof app.exit_code === 'number'
      ? ` (exit ${app.exit_code})`
      : '';
  return `${app.name}: ${app.state}${code}`;
}

/** The apps area: nothing while the session has no app. */
export function AppsStrip(props: { sessionId: string }): JSX.Element | null {
  const ctx = useContext(AppsContext);
  if (!ctx) {
    return null;
  }
  return <AppsList ctx={ctx} sessionId={props.sessionId} />;
}

function AppsList(props: {
  ctx: IAppsContext;
  sessionId: string;
}): JSX.Element | null {
  const { ctx, sessionId } = props;
  const { model } = ctx;
  const apps = useApps(model);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);

  useEffect(() => {
    setError(null);
    void model.open(sessionId);
  }, [model, sessionId]);

  if (model.sessionId !== sessionId || !apps.length) {
    return null;
  }
  // name '' with 'stop': every app that runs (Stop all apps).
  const act = async (name: string, what: 'stop' | 'restart'): Promise<void> => {
    setError(null);
    setBusy(name);
    try {
      if (what === 'restart') {
        await model.restart(name);
      } else {
        await (name ? model.stop(name) : model.stopAll());
      }
    } catch (e) {
      const label = what === 'stop' ? 'Stop' : 'Restart';
      setError(name ? `${label} ${name}: ${e}` : `Stop all apps: ${e}`);
    } finally {
      setBusy(null);
    }
  };
  const liveCount = apps.filter(a => isLive(a.state)).length;
  return (
    <div className="jp-ThinkApps" aria-label="Live apps">
      {apps.map(a => (
        <div key={a.name} className="jp-ThinkApps-app" data-state={a.state}>
          <div className="jp-ThinkApps-row">
            <span
              className="jp-ThinkApps-line"
              title={[a.error, a.command].filter(Boolean).join('\n')}
            >
              {appLine(a)}
            </span>
            {isLive(a.state) ? (
              <>
                <button
                  className="jp-ThinkApps-open"
                  onClick={() => ctx.open({ sessionId, name: a.name })}
                  title={`Open the app ${a.name} in a tab`}
                >
                  Open
                </button>
                <button
                  className="jp-ThinkApps-stop"
                  disabled={busy === a.name}
                  onClick={() => void act(a.name, 'stop')}
                  title={`Stop the app ${a.name}`}
                >
                  Stop
                </button>
              </>
            ) : null}
            <button
              className="jp-ThinkApps-restart"
              disabled={busy === a.name}
              onClick={() => void act(a.name, 'restart')}
              title={`Start the app ${a.name} again with its command`}
            >
              Restart
            </button>
          </div>
          {a.log_tail ? (
            <details className="jp-ThinkApps-log">
              <summary>Log</summary>
              <pre>{a.log_tail}</pre>
            </details>
          ) : null}
        </div>
      ))}
      {liveCount > 1 ? (
        <button
          className="jp-ThinkApps-stopAll"
          disabled={busy === ''}
          onClick={() => void act('', 'stop')}
          title="Stop every app of this chat that runs"
        >
          Stop all apps
        </button>
      ) : null}
      {error ? (
        <div className="jp-ThinkApps-error" role="alert">
          {error}
        </div>
      ) : null}
    </div>
  );
}

/**
 * On a `serve_app` card: "Open app" while its app runs; once it ended, how (e.g. stopped
 * with the run's Stop). Nothing on other cards.
 */
export function OpenAppButton(props: {
  call: IToolCallLike;
}): JSX.Element | null {
  const ctx = useContext(AppsContext);
  if (!ctx || props.call.name !== 'serve_app') {
    return null;
  }
  return <OpenApp ctx={ctx} call={props.call} />;
}

function OpenApp(props: {
  ctx: IAppsContext;
  call: IToolCallLike;
}): JSX.Element | null {
  const { ctx } = props;
  useApps(ctx.model); // the session the model follows is the card's
  const ref = appOfToolCall(props.call, ctx.model.sessionId);
  if (!ref) {
    return null;
  }
  const app = ctx.model.find(ref.sessionId, ref.name);
  if (app && !isLive(app.state)) {
    // The list's row is the app's last start: this card's app has ended since.
    return (
      <div
        className="jp-ThinkToolCard-appEnded"
        data-state={app.state}
        role="status"
      >
        {appLine(app)}
        {app.error && typeof app.exit_code !== 'number'
          ? ` (${app.error})`
          : ''}
      </div>
    );
  }
  return (
    <button
      className="jp-ThinkLinkButton jp-ThinkToolCard-openApp"
      onClick={() => ctx.open(ref)}
      title={`Open the app ${ref.name} in a JupyterLab tab`}
    >
      Open app {ref.name}
    </button>
  );
}
