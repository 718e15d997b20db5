/**
 * The chat's header: title, status, the agent type picker, the model badge, usage, and the
 * action log and debug buttons.
 */

import { bugIcon, listIcon } from '@jupyterlab/ui-components';
import React from 'react';

import { thinkIcon } from './icons';
import type { IChatState } from './reducer';
import { badgeStatus, StatusIndicator } from './statusIndicator';
import type { IEndpoint } from './tokens';
import { UsageBadge } from './usageView';

/** Props of the chat header. */
export interface IChatHeaderProps {
  state: IChatState;
  endpoint: IEndpoint | null;
  /** The model the main loop uses (the user's setting or the server's). */
  modelName: string;
  /** The endpoint of the user's settings, if any (it wins over the server's). */
  endpointUrl: string;
  /** Offer the debug events button. */
  debugEvents: boolean;
  showDebug: boolean;
  onToggleDebug: () => void;
  /** The model badge was clicked (open or close the setup card). */
  onModel: () => void;
  onOpenActionLog: () => void;
  /** The agent type picker of the current session (none without a session). */
  agentPicker?: JSX.Element | null;
  /** The review mode switch of the current session (none without a session). */
  reviewToggle?: JSX.Element | null;
}

/** The header row above the sessions list. */
export function ChatHeader(props: IChatHeaderProps): JSX.Element {
  const { state, endpoint, modelName, showDebug } = props;
  const currentId = state.session?.id ?? null;
  return (
    <div className="jp-ThinkChat-header">
      <span className="jp-ThinkChat-title">
        <thinkIcon.react tag="span" /> Think
      </span>
      <StatusIndicator
        status={badgeStatus(state)}
        detail={state.statusDetail}
        connected={state.connected || currentId === null}
      />
      <span className="jp-ThinkComposer-spacer" />
      {props.agentPicker ?? null}
      {props.reviewToggle ?? null}
      {endpoint?.configured ? (
        <button
          className="jp-ThinkModelBadge"
          aria-label="Model settings"
          title={`Model: ${modelName} (role: primary, the main loop) at ${
            props.endpointUrl || endpoint.effective_url
          }${endpoint.source === 'saved' ? ', saved from the setup card' : ', from the server environment'}. Click to change.`}
          onClick={props.onModel}
        >
          <span className="jp-ThinkModelBadge-name">{modelName}</span>
          <span className="jp-ThinkModelBadge-role">primary</span>
        </button>
      ) : null}
      {currentId ? <UsageBadge usage={state.usage} /> : null}
      <button
        className="jp-ThinkIconButton"
        aria-label="Open the action log"
        title="Action log"
        onClick={props.onOpenActionLog}
      >
        <listIcon.react tag="span" />
      </button>
      {props.debugEvents ? (
        <button
          className={`jp-ThinkIconButton${showDebug ? ' jp-mod-active' : ''}`}
          aria-label="Show debug events"
          aria-pressed={showDebug}
          title="Debug events"
          onClick={props.onToggleDebug}
        >
          <bugIcon.react tag="span" />
        </button>
      ) : null}
    </div>
  );
}
