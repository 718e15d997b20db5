/**
 * The chat: sessions, messages, status, composer and (optionally) debug events.
 */

import { Dialog, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import React, {
  useCallback,
  useEffect,
  useRef,
  useState,
  useSyncExternalStore
} from 'react';

import { ApprovalCards } from './approvalCards';
import { ApprovalsModel } from './approvals';
import { sendAsk, type IAskRequest } from './askRequest';
import type { IPendingAttachment } from './attachments';
import { Composer } from './composer';
import {
  sameSummary,
  type ContextProvider,
  type IContextSummary
} from './context';
import { DebugEvents } from './debugEvents';
import { AgentPicker } from './agentPicker';
import { ChatHeader } from './chatHeader';
import { ForeignNote } from './foreignNote';
import { MessageList } from './messageView';
import { QuestionCards, TranscriptCards } from './questionCards';
import { QuestionsModel } from './questions';
import type { ReviewModel } from './review';
import { ReviewPanel, ReviewToggle, useReviewOn } from './reviewPanel';
import { RewindNote } from './rewind';
import { SetupCard } from './setupCard';
import { SkillsList } from './skillsList';
import { SubagentView } from './subagentView';
import { JobsStrip } from './jobsView';
import { AppsStrip } from './appsView';
import { TaskPanel } from './taskPanel';
import { TasksModel } from './tasksModel';
import { useTimeTravel } from './timeTravel';
import { defaultSession, kindOf, SessionsList } from './sessionsList';
import { loadUntil, revealMessage, SessionSearch } from './sessionSearch';
import type { ISearchHit } from './api';
import { isRunning } from './reducer';
import { ChatStore } from './store';
import type {
  IAttachment,
  IEndpoint,
  ISession,
  IThinkSettings
} from './tokens';

/** What the chat panel needs from the application. */
export interface IChatPanelOptions {
  store: ChatStore;
  rendermime: IRenderMimeRegistry;
  context: ContextProvider;
  settings: () => IThinkSettings;
  openPath: (path: string) => void;
  openActionLog: () => void;
  /** Put code in a new cell below the active cell of the current notebook. */
  insertCell?: (code: string) => void;
  /** The proposal of the open session (review mode). */
  review?: ReviewModel;
}

const LAST_SESSION_KEY = 'think:last-session';
const NEW_TITLE = 'New chat';

/** A request of `ChatPanel.ask` and its promise. */
export interface IPendingAsk {
  request: IAskRequest;
  resolve: () => void;
  reject: (e: unknown) => void;
}

/** The chat inside the sidebar widget. */
export function ChatApp(
  props: IChatPanelOptions & { settingsVersion: number; asks: IPendingAsk[] }
): JSX.Element {
  const { store, rendermime, context, openPath } = props;
  const api = store.api;
  const inspectVariables = useCallback(
    (path: string, names: string[]) => api.inspectVariables(path, names),
    [api]
  );
  const state = useSyncExternalStore(store.subscribe, store.getSnapshot);
  const sessionReview = state.session?.review === true;
  const reviewOn = useReviewOn(props.review, sessionReview);
  const [approvals] = useState(() => new ApprovalsModel(store));
  const [questions] = useState(() => new QuestionsModel(store));
  const [tasks] = useState(() => new TasksModel(store));
  // Only the drilled-in task id: subagent frames re-render the tasks area, not the chat.
  const drill = useSyncExternalStore(tasks.subscribe, tasks.getDrill);
  const [sessions, setSessions] = useState<ISession[]>([]);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [attach, setAttach] = useState(props.settings().attachContext);
  const [contextSummary, setContextSummary] = useState<IContextSummary | null>(
    null
  );
  const [showDebug, setShowDebug] = useState(false);
  // "Propose only" holds for the next message alone.
  const [proposeOnly, setProposeOnly] = useState(false);
  const [endpoint, setEndpoint] = useState<IEndpoint | null>(null);
  const [setupOpen, setSetupOpen] = useState(false);
  // The card is filled from the server's answer to the GET made when it opens (the
  // model may have been saved or deleted elsewhere since): a new answer, a new form.
  const [setupLoaded, setSetupLoaded] = useState(0);
  const [setupLoading, setSetupLoading] = useState(false);
  const [setupDismissed, setSetupDismissed] = useState(false);
  const [editRequest, setEditRequest] = useState<{
    id: string;
    n: number;
  } | null>(null);
  const settings = props.settings();
  const currentId = state.session?.id ?? null;

  // With no model configured the sidebar opens on the setup card.
  useEffect(() => {
    api
      .getModel()
      .then(setEndpoint)
      .catch(e => console.warn('think: model endpoint not loaded', e));
  }, [api]);
  // (An endpoint in the user's Settings → Think also works without the card.)
  const showSetup =
    setupOpen ||
    (!setupDismissed &&
      endpoint !== null &&
      !endpoint.configured &&
      !settings.endpoint);
  // Another tab (or the environment) may have set the endpoint since: ask again.
  const openSetup = useCallback(() => {
    setSetupOpen(true);
    setSetupLoading(true);
    api
      .getModel()
      .then(ep => {
        setEndpoint(ep);
        setSetupLoaded(n => n + 1);
      })
      .catch(e => console.warn('think: model endpoint not loaded', e))
      .finally(() => setSetupLoading(false));
  }, [api]);
  const closeSetup = useCallback(() => {
    setSetupOpen(false);
    setSetupDismissed(true);
  }, []);

  const refreshSessions = useCallback(async (): Promise<ISession[]> => {
    try {
      const list = await api.listSessions();
      setSessions(list);
      setLoadError(null);
      return list;
    } catch (e) {
      setLoadError(String(e));
      return [];
    }
  }, [api]);

  const select = useCallback(
    (s: ISession | null) => {
      if (s && kindOf(s) === 'chat') {
        window.localStorage.setItem(LAST_SESSION_KEY, s.id);
      }
      store.open(s);
    },
    [store]
  );

  useEffect(() => {
    void refreshSessions().then(list => {
      if (store.sessionId) {
        return;
      }
      const last = window.localStorage.getItem(LAST_SESSION_KEY);
      select(defaultSession(list, last));
    });
  }, []);

  // The session title may change on the server (rename in another tab); a session opened
  // from elsewhere (a reminder's notification) may be newer than the list.
  useEffect(() => {
    const s = state.session;
    if (s && !sessions.some(x => x.id === s.id)) {
      void refreshSessions();
    }
    if (s && sessions.some(x => x.id === s.id && x.title !== s.title)) {
      setSessions(sessions.map(x => (x.id === s.id ? { ...x, ...s } : x)));
    }
  }, [state.session]);

  // Follow the active document (and its selected cells) for the composer's chip.
  const contextRef = useRef(context);
  useEffect(() => {
    const update = (): void =>
      setContextSummary(prev => {
        const next = contextRef.current.summary();
        return sameSummary(prev, next) ? prev : next;
      });
    update();
    const timer = window.setInterval(update, 1000);
    return () => window.clearInterval(timer);
  }, []);

  // Requests of ChatPanel.ask, once this chat is rendered.
  useEffect(() => {
    for (const a of props.asks.splice(0)) {
      tasks.close();
      const options = {
        model: settings.model || undefined,
        endpoint: settings.endpoint || undefined
      };
      sendAsk(
        { api, store, refresh: refreshSessions, select, options },
        a.request
      ).then(a.resolve, a.reject);
    }
  });

  const sendOptions = () => ({
    context: attach ? (context.current() ?? undefined) : undefined,
    model: settings.model || undefined,
    endpoint: settings.endpoint || undefined
  });

  const report = (what: string) => (e: unknown) =>
    void showErrorMessage(`Think: ${what} failed`, String(e));
  const travel = useTimeTravel(store, report);

  const onSend = async (
    text: string,
    pending: IPendingAttachment[] = [],
    interrupt = false
  ): Promise<void> => {
    // What is sent goes to the chat: show it there, not behind a subagent's stream.
    tasks.close();
    let id = store.sessionId;
    // A sidebar message never goes into a notebook's or a %%think session: a new chat.
    if (!id || kindOf(store.state.session) !== 'chat') {
      try {
        const s = await api.createSession({ title: text.slice(0, 60) });
        await refreshSessions();
        select(s);
        id = s.id;
      } catch (e) {
        report('creating a session')(e);
        return;
      }
    }
    // A session made with "New session" takes its title from its first message.
    const session = store.state.session;
    if (session && session.title === NEW_TITLE && !store.state.order.length) {
      void onRename(
        session.id,
        (text.trim() || pending[0]?.name || NEW_TITLE).slice(0, 60)
      );
    }
    let attachments: IAttachment[] = [];
    try {
      attachments = await uploadAll(id, pending);
    } catch (e) {
      report('attaching files')(e);
      return;
    }
    const propose = proposeOnly && !reviewOn;
    setProposeOnly(false);
    store
      .send(text, {
        ...sendOptions(),
        attachments,
        interrupt,
        proposeOnly: propose
      })
      .catch(() => {
        /* shown on the message itself */
      });
  };

  // Files and images go up first (each is checked by the server); cells go inline.
  const uploadAll = (
    id: string,
    pending: IPendingAttachment[]
  ): Promise<IAttachment[]> =>
    Promise.all(
      pending.map(a =>
        a.cells
          ? Promise.resolve(a.cells)
          : api.uploadAttachment(id, a.file as Blob, a.name)
      )
    );

  const onCreate = async (): Promise<void> => {
    try {
      const s = await api.createSession({ title: NEW_TITLE });
      setSessions(prev => [s, ...prev.filter(x => x.id !== s.id)]);
      select(s);
    } catch (e) {
      report('creating a session')(e);
    }
  };

  const onRename = async (id: string, title: string): Promise<void> => {
    try {
      const s = await api.renameSession(id, title);
      store.dispatch({ type: 'local/session', session: { ...s, id, title } });
      setSessions(prev =>
        prev.map(x => (x.id === id ? { ...x, ...s, title } : x))
      );
    } catch (e) {
      report('renaming')(e);
    }
  };

  const onDelete = async (id: string): Promise<void> => {
    const s = sessions.find(x => x.id === id);
    const answer = await showDialog({
      title: 'Delete session',
      body: `Delete "${s?.title ?? id}" and its history?`,
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Delete' })]
    });
    if (!answer.button.accept) {
      return;
    }
    try {
      await api.deleteSession(id);
      const rest = sessions.filter(x => x.id !== id);
      setSessions(rest);
      if (store.sessionId === id) {
        select(rest[0] ?? null);
      }
    } catch (e) {
      report('deleting')(e);
    }
  };

  // Stable callbacks: memoised messages ignore callback identity.
  const editRef = useRef<(id: string, text: string) => void>(() => undefined);
  editRef.current = (id, text) =>
    void store.edit(id, text, sendOptions()).catch(report('editing'));
  const onEdit = useCallback(
    (id: string, text: string) => editRef.current(id, text),
    []
  );
  const onLoadOlder = useCallback(() => store.loadOlder(), [store]);
  const loadWhole = useCallback(
    (resultId: string) =>
      store.sessionId
        ? api.messageContent(store.sessionId, resultId)
        : Promise.reject(new Error('no session')),
    [store, api]
  );

  // A search hit opens its session, then shows its message once the history has it.
  const bodyRef = useRef<HTMLDivElement>(null);
  const [reveal, setReveal] = useState<string | null>(null);
  const openHit = async (hit: ISearchHit): Promise<void> => {
    try {
      const s =
        sessions.find(x => x.id === hit.session_id) ??
        (await api.getSession(hit.session_id));
      select(s);
      await loadUntil(store, hit);
      setReveal(hit.message_id);
      if (bodyRef.current) {
        revealMessage(bodyRef.current, hit.message_id);
      }
    } catch (e) {
      void showErrorMessage('Think: cannot open the session', String(e));
    }
  };

  const running = isRunning(state);
  const chatKind = kindOf(state.session);
  const onEditLast = (): void => {
    const last = [...state.order]
      .reverse()
      .find(id => state.messages[id].role === 'user');
    if (last) {
      setEditRequest({ id: last, n: (editRequest?.n ?? 0) + 1 });
    }
  };
  const modelName = settings.model || endpoint?.model || '';
  const lastUser = [...state.order]
    .reverse()
    .find(id => state.messages[id].role === 'user');

  return (
    <TranscriptCards approvals={approvals} questions={questions}>
      <div className="jp-ThinkChat-body" data-running={running} ref={bodyRef}>
        <ChatHeader
          state={state}
          endpoint={endpoint}
          modelName={modelName}
          endpointUrl={settings.endpoint}
          debugEvents={settings.debugEvents}
          showDebug={showDebug}
          onToggleDebug={() => setShowDebug(!showDebug)}
          onModel={() => (setupOpen ? closeSetup() : openSetup())}
          onOpenActionLog={props.openActionLog}
          agentPicker={
            currentId ? <AgentPicker api={api} sessionId={currentId} /> : null
          }
          reviewToggle={
            currentId && props.review ? (
              <ReviewToggle
                model={props.review}
                sessionReview={sessionReview}
              />
            ) : null
          }
        />
        <SessionsList
          sessions={sessions}
          currentId={currentId}
          onSelect={id => select(sessions.find(s => s.id === id) ?? null)}
          onCreate={() => void onCreate()}
          onRename={(id, t) => void onRename(id, t)}
          onDelete={id => void onDelete(id)}
        />
        <SessionSearch api={api} onOpen={hit => void openHit(hit)} />
        {loadError ? (
          <div className="jp-ThinkBanner jp-mod-error" role="alert">
            Cannot reach the Think server extension: {loadError}
          </div>
        ) : null}
        {showSetup ? null : <TaskPanel model={tasks} running={running} />}
        {showSetup || !currentId ? null : (
          <JobsStrip
            store={store}
            sessionId={currentId}
            settings={api.settings}
          />
        )}
        {showSetup || !currentId ? null : <AppsStrip sessionId={currentId} />}
        {showSetup || !currentId ? null : (
          <SkillsList api={api} sessionId={currentId} running={running} />
        )}
        {showSetup || !currentId || !props.review ? null : (
          <ReviewPanel model={props.review} />
        )}
        {showSetup ? (
          <div className="jp-ThinkSetupHost">
            {setupLoading ? (
              <div className="jp-ThinkSetup-loading" role="status">
                Reading the server&apos;s model settings…
              </div>
            ) : (
              <SetupCard
                key={setupLoaded}
                api={api}
                current={endpoint}
                onSaved={ep => {
                  setEndpoint(ep);
                  setSetupOpen(false);
                }}
                onCancel={closeSetup}
              />
            )}
          </div>
        ) : showDebug && settings.debugEvents ? (
          <DebugEvents events={store.debugEvents} />
        ) : drill ? (
          <SubagentView
            key={drill}
            model={tasks}
            taskId={drill}
            rendermime={rendermime}
            onOpenPath={openPath}
            loadWhole={loadWhole}
          />
        ) : (
          <MessageList
            state={state}
            rendermime={rendermime}
            onOpenPath={openPath}
            onEdit={onEdit}
            onLoadOlder={onLoadOlder}
            loadWhole={loadWhole}
            onSetup={openSetup}
            onInsertCode={props.insertCell}
            editRequest={editRequest}
            readOnly={chatKind !== 'chat'}
            siblings={travel.siblings}
            onShowSibling={travel.onShowSibling}
            onRewind={travel.onRewind}
            reveal={reveal}
          />
        )}
        {travel.rewind ? (
          <RewindNote state={travel.rewind} onDismiss={travel.dismiss} />
        ) : null}
        {showSetup ? null : <ApprovalCards model={approvals} />}
        {showSetup ? null : <QuestionCards model={questions} />}
        {showSetup ? null : chatKind !== 'chat' && state.session ? (
          <ForeignNote
            session={state.session}
            kind={chatKind}
            onNewChat={() => void onCreate()}
            onOpenPath={openPath}
          />
        ) : (
          <Composer
            running={running}
            canRetry={!!lastUser}
            attach={attach}
            context={contextSummary}
            onAttachChange={setAttach}
            onSend={(text, pending) => void onSend(text, pending)}
            onStopAndSend={(text, pending) => void onSend(text, pending, true)}
            cellsPath={source => context.notebookPath(source)}
            inspectVariables={inspectVariables}
            onStop={() => void store.stop().catch(report('stopping'))}
            onRetry={() =>
              void store.retry(sendOptions()).catch(report('retry'))
            }
            onEditLast={onEditLast}
            fill={travel.fill}
            proposeOnly={proposeOnly}
            onProposeOnlyChange={
              props.review && currentId && !reviewOn
                ? setProposeOnly
                : undefined
            }
          />
        )}
      </div>
    </TranscriptCards>
  );
}
