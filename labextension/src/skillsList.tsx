/**
 * The "Skills" area of the chat sidebar: the AGENTS.md files and skills the session's next
 * request loads, where each comes from, and the invalid ones with the reason. Folded by
 * default (a one-line header with the counts); read again when the session changes and
 * when a run ends (the agent may have written a skill).
 */

import { caretDownIcon, caretRightIcon } from '@jupyterlab/ui-components';
import React, { useEffect, useState } from 'react';

import type { ISkillsReport, ThinkApi } from './api';

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
  }, [api, sessionId, running]);

  if (!report && !error) {
    return null;
  }
  const skills = report?.skills ?? { loaded: [], invalid: [] };
  const instructions = report?.instructions ?? { loaded: [], invalid: [] };
  if (
    !error &&
    !skills.loaded.length &&
    !skills.invalid.length &&
    !instructions.loaded.length
  ) {
    return null;
  }
  const caret = open ? caretDownIcon : caretRightIcon;
  const counts =
    `${skills.loaded.length} skill${skills.loaded.length === 1 ? '' : 's'}` +
    (skills.invalid.length ? `, ${skills.invalid.length} invalid` : '') +
    (instructions.loaded.length
      ? `, ${instructions.loaded.length} AGENTS.md`
      : '');
  return (
    <section className="jp-ThinkSkills" aria-label="Skills">
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
