/**
 * The "Skills" area of the chat sidebar: the AGENTS.md files and skills the session's next
 * request loads, where each comes from, the invalid ones with the reason, and the workspace
 * skills waiting for a person's review. Folded by default (a one-line header with the
 * counts); read again when the session changes, when a run ends (the agent may have written
 * a skill) and after a review.
 *
 * A skill waiting for review shows its SKILL.md on Review; Approve and Reject decide the
 * session's pending approval of that content through the approvals route, as a card does.
 */

import { caretDownIcon, caretRightIcon } from '@jupyterlab/ui-components';
import React, { useEffect, useState } from 'react';

import type { ISkillReview, ISkillsReport, ThinkApi } from './api';

/** One skill waiting for review: its reason, then on Review its SKILL.md and the choice. */
function ReviewItem(props: {
  api: ThinkApi;
  sessionId: string;
  review: ISkillReview;
  onDecided: () => void;
}): JSX.Element {
  const { api, sessionId, review, onDecided } = props;
  const [shown, setShown] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const approval = review.approval;
  const decide = async (decision: 'approve' | 'reject'): Promise<void> => {
    if (!approval) {
      return;
    }
    setBusy(true);
    setError(null);
    const body: Record<string, unknown> = { decision, source: 'sidebar' };
    if (decision === 'reject') {
      body.reason = 'rejected in the Skills area';
    }
    try {
      await api.decideApproval(sessionId, approval.id, body);
    } catch (e) {
      setError(String((e as Error)?.message ?? e));
    } finally {
      setBusy(false);
    }
    onDecided();
  };
  return (
    <li className="jp-ThinkSkill jp-mod-review" title={review.path}>
      <div className="jp-ThinkSkill-row">
        <code className="jp-ThinkSkill-name">/{review.name}</code>
        <span className="jp-ThinkSkill-note" title={review.reason}>
          {review.reason.split(/[:;]/)[0]}
        </span>
        {approval ? (
          <button
            className="jp-ThinkSkill-reviewToggle"
            aria-expanded={shown}
            onClick={() => setShown(!shown)}
          >
            Review
          </button>
        ) : null}
      </div>
      {shown && approval ? (
        <div className="jp-ThinkSkill-review">
          <p className="jp-ThinkSkill-why">{review.reason}</p>
          <pre className="jp-ThinkSkill-text" aria-label={review.path}>
            {review.text}
          </pre>
          <div className="jp-ThinkSkill-actions">
            <button
              className="jp-mod-accept"
              disabled={busy}
              onClick={() => void decide('approve')}
            >
              Approve
            </button>
            <button disabled={busy} onClick={() => void decide('reject')}>
              Reject
            </button>
          </div>
          {error ? (
            <div className="jp-ThinkSkills-error" role="alert">
              {error}
            </div>
          ) : null}
        </div>
      ) : null}
    </li>
  );
}

/** The Skills area of one session. */
export function SkillsList(props: {
  api: ThinkApi;
  sessionId: string;
  running: boolean;
}): JSX.Element | null {
  const { api, sessionId, running } = props;
  const [report, setReport] = useState<ISkillsReport | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [open, setOpen] = useState(false);
  const [reads, setReads] = useState(0);

  useEffect(() => {
    if (running) {
      return;
    }
    let live = true;
    api
      .listSkills(sessionId)
      .then(r => {
        if (live) {
          setReport(r);
          setError(null);
        }
      })
      .catch(e => live && setError(String(e?.message ?? e)));
    return () => {
      live = false;
    };
  }, [api, sessionId, running, reads]);

  if (!report && !error) {
    return null;
  }
  const skills = report?.skills ?? { loaded: [], invalid: [] };
  const review = skills.review ?? [];
  const instructions = report?.instructions ?? { loaded: [], invalid: [] };
  if (
    !error &&
    !skills.loaded.length &&
    !skills.invalid.length &&
    !review.length &&
    !instructions.loaded.length
  ) {
    return null;
  }
  const caret = open ? caretDownIcon : caretRightIcon;
  const counts =
    `${skills.loaded.length} skill${skills.loaded.length === 1 ? '' : 's'}` +
    (review.length ? `, ${review.length} to review` : '') +
    (skills.invalid.length ? `, ${skills.invalid.length} invalid` : '') +
    (instructions.loaded.length
      ? `, ${instructions.loaded.length} AGENTS.md`
      : '');
  return (
    <section
      className={`jp-ThinkSkills${review.length ? ' jp-mod-review' : ''}`}
      aria-label="Skills"
    >
      <button
        className="jp-ThinkSkills-toggle"
        aria-expanded={open}
        onClick={() => setOpen(!open)}
      >
        <caret.react tag="span" />
        <span className="jp-ThinkSkills-title">Skills</span>
        <span className="jp-ThinkSkills-counts">{counts}</span>
      </button>
      {open ? (
        <ul className="jp-ThinkSkills-list">
          {error ? (
            <li className="jp-ThinkSkills-error" role="alert">
              Cannot list the skills: {error}
            </li>
          ) : null}
          {skills.loaded.map(s => (
            <li
              key={`skill:${s.source}:${s.name}`}
              className="jp-ThinkSkill"
              title={`${s.path}\n${s.note}`}
            >
              <code className="jp-ThinkSkill-name">/{s.name}</code>
              <span className="jp-ThinkSkill-source">{s.source}</span>
              <span className="jp-ThinkSkill-note">{s.note}</span>
            </li>
          ))}
          {review.map(r => (
            <ReviewItem
              key={`review:${r.path}:${r.sha256}`}
              api={api}
              sessionId={sessionId}
              review={r}
              onDecided={() => setReads(n => n + 1)}
            />
          ))}
          {skills.invalid.map(p => (
            <li
              key={`invalid:${p.source}:${p.path}`}
              className="jp-ThinkSkill jp-mod-invalid"
              title={p.path}
            >
              <code className="jp-ThinkSkill-name">{p.name}</code>
              <span className="jp-ThinkSkill-source">{p.source}</span>
              <span className="jp-ThinkSkill-note">invalid: {p.reason}</span>
            </li>
          ))}
          {instructions.loaded.map(f => (
            <li key={`agents:${f.path}`} className="jp-ThinkSkill">
              <code className="jp-ThinkSkill-name">{f.path}</code>
              <span className="jp-ThinkSkill-source">{f.source}</span>
              <span className="jp-ThinkSkill-note">{f.note}</span>
            </li>
          ))}
          {instructions.invalid.map(p => (
            <li
              key={`agents-invalid:${p.path}`}
              className="jp-ThinkSkill jp-mod-invalid"
            >
              <code className="jp-ThinkSkill-name">{p.path}</code>
              <span className="jp-ThinkSkill-source">{p.source}</span>
              <span className="jp-ThinkSkill-note">{p.reason}</span>
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}
