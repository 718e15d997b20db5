/**
 * The agent type picker of the chat header: a small select of the types the server lists
 * (`GET /api/think/agents`), set on the session with `PATCH .../sessions/{id} {"agent"}`.
 * The choice applies from the session's next request. Read again when the session changes
 * and when the select gains focus (a workspace type may have been approved meanwhile).
 */

import React, { useCallback, useEffect, useState } from 'react';

import type { IAgentsReport, ThinkApi } from './api';

/** Props of the picker. */
export interface IAgentPickerProps {
  api: ThinkApi;
  sessionId: string;
}

/** What a type lets the agent do, in a few words (the option's tooltip). */
function toolsText(allow: string[] | null, deny: string[]): string {
  const parts = [allow === null ? 'every tool' : `only ${allow.join(', ')}`];
  if (deny.length) {
    parts.push(`not ${deny.join(', ')}`);
  }
  return parts.join('; ');
}

/** The select; nothing until the list arrived. */
export function AgentPicker(props: IAgentPickerProps): JSX.Element | null {
  const { api, sessionId } = props;
  const [report, setReport] = useState<IAgentsReport | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const load = useCallback(async () => {
    try {
      setReport(await api.listAgents(sessionId));
    } catch (e) {
      setError(String((e as Error)?.message ?? e));
    }
  }, [api, sessionId]);

  useEffect(() => {
    setReport(null);
    setError(null);
    void load();
  }, [load]);

  if (!report) {
    return null;
  }
  const current = report.current ?? report.default;
  const chosen = report.agents.find(a => a.name === current);
  const change = async (name: string): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      await api.setSessionAgent(
        sessionId,
        name === report.default ? null : name
      );
    } catch (e) {
      setError(String((e as Error)?.message ?? e));
    } finally {
      setBusy(false);
    }
    await load();
  };
  return (
    <span className="jp-ThinkAgentPicker">
      <select
        aria-label="Agent type"
        value={current}
        disabled={busy}
        title={
          error ??
          (chosen
            ? `${chosen.name}: ${chosen.description} Tools: ${toolsText(
                chosen.tools.allow,
                chosen.tools.deny
              )}. Applies from the next message.`
            : `The agent type ${current} is not available`)
        }
        onFocus={() => void load()}
        onChange={e => void change(e.currentTarget.value)}
      >
        {chosen ? null : (
          <option value={current}>{current} (unavailable)</option>
        )}
        {report.agents.map(a => (
          <option
            key={a.name}
            value={a.name}
            title={`${a.description} (${a.source}; ${toolsText(a.tools.allow, a.tools.deny)})`}
          >
            {a.name}
          </option>
        ))}
      </select>
      {error ? (
        <span className="jp-ThinkAgentPicker-error" role="alert">
          {error}
        </span>
      ) : null}
    </span>
  );
}
