/**
 * The question cards above the composer: the agent's question, one button per option and,
 * when typed answers are allowed, a text box. The first answer (here, in a notebook or over
 * the API) wins; once the server says so the card leaves, and the `ask_user` call's card in
 * the transcript shows the answer folded to one line (as a decided approval is).
 */

import { caretDownIcon, caretRightIcon } from '@jupyterlab/ui-components';
import React, {
  createContext,
  useContext,
  useState,
  useSyncExternalStore
} from 'react';

import { ApprovalsContext } from './approvalCards';
import type { ApprovalsModel } from './approvals';
import {
  answeredFor,
  pendingQuestions,
  type IQuestion,
  type QuestionsModel
} from './questions';

/** The questions of the open session, for the tool cards of the transcript. */
export const QuestionsContext = createContext<QuestionsModel | null>(null);

const NO_QUESTIONS: readonly IQuestion[] = [];
const noop = (): (() => void) => () => undefined;

/** The answered question of tool call `callId` (re-renders when the questions change). */
export function useAnsweredQuestion(callId: string): IQuestion | null {
  const model = useContext(QuestionsContext);
  const snapshot = model?.getSnapshot ?? (() => NO_QUESTIONS);
  const list = useSyncExternalStore(
    model?.subscribe ?? noop,
    snapshot,
    snapshot
  );
  return answeredFor(list, callId);
}

/** The approvals and questions of the open session, for the transcript's tool cards. */
export function TranscriptCards(props: {
  approvals: ApprovalsModel;
  questions: QuestionsModel;
  children: React.ReactNode;
}): JSX.Element {
  return (
    <ApprovalsContext.Provider value={props.approvals}>
      <QuestionsContext.Provider value={props.questions}>
        {props.children}
      </QuestionsContext.Provider>
    </ApprovalsContext.Provider>
  );
}

/** What became of a question, in words: the answer, by whom and from where. */
export function describeAnswer(q: IQuestion): string {
  if (q.status === 'answered') {
    const who = q.user ? ` by ${q.user}` : '';
    const where = q.source ? ` via ${q.source}` : '';
    return `Answered${who}${where}: ${q.answer}`;
  }
  return q.source === 'cancel'
    ? 'Closed: the run was cancelled'
    : 'No answer in time (the agent was told)';
}

/** An answered question as one line of the transcript; expands to the whole card. */
export function AnsweredQuestion(props: { question: IQuestion }): JSX.Element {
  const q = props.question;
  const [open, setOpen] = useState(false);
  const line = `${q.question} · ${describeAnswer(q)}`;
  return (
    <div
      className={`jp-ThinkQuestionLine jp-mod-${q.status}`}
      data-question-id={q.id}
      data-status={q.status}
    >
      <button
        className="jp-ThinkApprovalLine-header"
        aria-expanded={open}
        title={line}
        onClick={() => setOpen(!open)}
      >
        {open ? (
          <caretDownIcon.react tag="span" />
        ) : (
          <caretRightIcon.react tag="span" />
        )}
        <span className="jp-ThinkApprovalLine-text">{line}</span>
      </button>
      {open ? (
        <QuestionCard question={q} answer={() => Promise.resolve()} />
      ) : null}
    </div>
  );
}

/** Every question of the open session still waiting for an answer. */
export function QuestionCards(props: {
  model: QuestionsModel;
}): JSX.Element | null {
  const all = useSyncExternalStore(
    props.model.subscribe,
    props.model.getSnapshot
  );
  const list = pendingQuestions(all);
  if (!list.length) {
    return null;
  }
  return (
    <div className="jp-ThinkQuestions" aria-label="Questions from Think">
      {list.map(q => (
        <QuestionCard
          key={q.id}
          question={q}
          answer={text => props.model.answer(q.id, text)}
        />
      ))}
    </div>
  );
}

/** One question: its options as buttons, a text box if allowed, or its answer. */
export function QuestionCard(props: {
  question: IQuestion;
  answer: (text: string) => Promise<void>;
}): JSX.Element {
  const q = props.question;
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const send = async (value: string): Promise<void> => {
    if (!value.trim()) {
      setError('Type an answer first.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await props.answer(value);
    } catch (e) {
      setError(String((e as Error).message ?? e));
    } finally {
      setBusy(false);
    }
  };
  const labelId = `jp-ThinkQuestion-${q.id}`;
  return (
    <div
      className={`jp-ThinkQuestion jp-mod-${q.status}`}
      data-question-id={q.id}
      role="group"
      aria-labelledby={labelId}
    >
      <div className="jp-ThinkQuestion-text" id={labelId}>
        <b>Think asks:</b> {q.question}
        {q.taskId ? (
          <span className="jp-ThinkQuestion-task">
            {' '}
            (subagent, task {q.taskId})
          </span>
        ) : null}
      </div>
      {q.status === 'pending' ? (
        <>
          {q.options.length ? (
            <div className="jp-ThinkQuestion-options">
              {q.options.map(o => (
                <button
                  key={o}
                  type="button"
                  className="jp-mod-styled"
                  disabled={busy}
                  aria-label={`Answer: ${o}`}
                  onClick={() => void send(o)}
                >
                  {o}
                </button>
              ))}
            </div>
          ) : null}
          {q.allowText ? (
            <form
              className="jp-ThinkQuestion-typed"
              onSubmit={e => {
                e.preventDefault();
                void send(text);
              }}
            >
              <input
                type="text"
                value={text}
                disabled={busy}
                aria-label="Your answer"
                placeholder="Type an answer"
                onChange={e => setText(e.target.value)}
              />
              <button
                type="submit"
                className="jp-mod-styled jp-mod-accept"
                disabled={busy}
              >
                Send
              </button>
            </form>
          ) : null}
        </>
      ) : (
        <div className="jp-ThinkQuestion-answer" role="status">
          {describeAnswer(q)}
        </div>
      )}
      {error ? (
        <div className="jp-ThinkBanner jp-mod-error" role="alert">
          {error}
        </div>
      ) : null}
    </div>
  );
}
