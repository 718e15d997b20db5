/**
 * The question cards above the composer: the agent's question, one button per option and,
 * when typed answers are allowed, a text box. The first answer (here, in a notebook or over
 * the API) wins; a card settles when the server says so and then shows the answer.
 */

import React, { useState, useSyncExternalStore } from 'react';

import type { IQuestion, QuestionsModel } from './questions';

/** Every question of the open session still pending, and the ones answered since. */
export function QuestionCards(props: {
  model: QuestionsModel;
}): JSX.Element | null {
  const list = useSyncExternalStore(
    props.model.subscribe,
    props.model.getSnapshot
  );
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
          {q.status === 'answered'
            ? `Answered${q.user ? ` by ${q.user}` : ''}${
                q.source ? ` via ${q.source}` : ''
              }: ${q.answer}`
            : q.source === 'cancel'
              ? 'Closed: the run was cancelled'
              : 'No answer in time (the agent was told)'}
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
