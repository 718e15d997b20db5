/**
 * A subagent's drill-in: its text and tool cards (the chat's own message and
 * tool card views), its status and model, and a way back to the chat. Live while it runs,
 * from the store's copy of its messages after a reload.
 */

import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { caretLeftIcon } from '@jupyterlab/ui-components';
import React, { useLayoutEffect, useRef, useSyncExternalStore } from 'react';

import type { IToolCallState } from './chatState';
import { ErrorNote } from './errorNote';
import { Markdown } from './markdown';
import { MessageItem } from './messageItem';
import { SubagentBadge, subagentStatus, TaskStatusIcon } from './taskPanel';
import type { TasksModel } from './tasksModel';

/** Props of the drill-in. */
export interface ISubagentViewProps {
  model: TasksModel;
  taskId: string;
  rendermime: IRenderMimeRegistry;
  onOpenPath: (path: string) => void;
  loadWhole?: (resultId: string) => Promise<string>;
}

const noEdit = (): void => undefined;

/** The stream of one subagent, in place of the message list. */
export function SubagentView(props: ISubagentViewProps): JSX.Element {
  const { model, taskId, rendermime, onOpenPath, loadWhole } = props;
  const stream = useSyncExternalStore(
    model.subscribe,
    () => model.getSnapshot().streams[taskId]
  );
  const task = useSyncExternalStore(
    model.subscribe,
    () => model.getSnapshot().graph.tasks[taskId]
  );
  const scroller = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  useLayoutEffect(() => {
    const el = scroller.current;
    if (el && stick.current) {
      el.scrollTop = el.scrollHeight;
    }
  });

  const title = task?.title || stream?.title || taskId;
  const status = subagentStatus(task, stream?.status) ?? 'running';
  const agentModel = stream?.model || task?.subagent?.model || '';
  const order = stream?.order ?? [];
  const hasPrompt = order.some(id => stream!.messages[id].role === 'user');
  const lastText = order.length
    ? stream!.messages[order[order.length - 1]].content.trim()
    : '';
  const result = stream?.result ?? task?.result ?? '';
  const error = stream?.error?.message || task?.error || '';

  return (
    <section
      className="jp-ThinkSubagent"
      aria-label={`Subagent: ${title}`}
      data-task-id={taskId}
      data-status={status}
    >
      <div className="jp-ThinkSubagent-header">
        <button
          className="jp-ThinkLabelButton jp-ThinkSubagent-back"
          aria-label="Back to the chat"
          title="Back to the chat"
          onClick={() => model.close()}
        >
          <caretLeftIcon.react tag="span" />
          <span>Chat</span>
        </button>
        <span className="jp-ThinkSubagent-label">Subagent</span>
        <SubagentBadge status={status} model={agentModel} />
      </div>
      <div
        className="jp-ThinkMessages jp-ThinkSubagent-messages"
        ref={scroller}
        onScroll={e => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
        }}
      >
        <div className="jp-ThinkSubagent-heading">
          {task ? <TaskStatusIcon status={task.status} /> : null}
          <span className="jp-ThinkSubagent-title">{title}</span>
        </div>
        <div className="jp-ThinkSubagent-meta">
          {task?.type ? (
            <span className="jp-ThinkTask-type">{task.type}</span>
          ) : null}
          {agentModel ? <span>model {agentModel}</span> : null}
        </div>
        {task?.description && !hasPrompt ? (
          <div className="jp-ThinkSubagent-brief" aria-label="Instructions">
            {task.description}
          </div>
        ) : null}
        {stream?.nextCursor !== null && stream?.nextCursor !== undefined ? (
          <button
            className="jp-ThinkLinkButton jp-ThinkMessages-older"
            onClick={() => void model.loadOlder(taskId)}
          >
            Show earlier messages
          </button>
        ) : null}
        {stream?.dropped ? (
          <div className="jp-ThinkMessage-note">
            {stream.dropped} earlier step{stream.dropped === 1 ? '' : 's'} not
            kept here (the store has them: reopen after a reload).
          </div>
        ) : null}
        {stream?.history === 'loading' && !order.length ? (
          <div className="jp-ThinkMessage-note" role="status">
            Loading the subagent&apos;s messages…
          </div>
        ) : null}
        {stream?.history === 'error' ? (
          <div className="jp-ThinkBanner jp-mod-error" role="alert">
            The subagent&apos;s messages could not be loaded:{' '}
            {stream.historyError}
          </div>
        ) : null}
        {order.map(id => {
          const m = stream!.messages[id];
          if (m.role === 'user') {
            // What the delegating agent asked for (stored): folded, it is long.
            return (
              <details
                key={id}
                className="jp-ThinkSubagent-brief jp-ThinkSubagent-prompt"
              >
                <summary>Instructions</summary>
                <Markdown
                  text={m.content}
                  rendermime={rendermime}
                  onOpenPath={onOpenPath}
                />
              </details>
            );
          }
          return (
            <MessageItem
              key={id}
              message={m}
              tools={m.toolCallIds
                .map(t => stream!.toolCalls[t])
                .filter((t): t is IToolCallState => !!t)}
              rendermime={rendermime}
              onOpenPath={onOpenPath}
              onEdit={noEdit}
              editable={false}
              loadWhole={loadWhole}
            />
          );
        })}
        {status === 'running' &&
        !order.length &&
        stream?.history !== 'loading' ? (
          <div
            className="jp-ThinkMessage-typing"
            aria-label="Waiting for the subagent"
          >
            <span />
            <span />
            <span />
          </div>
        ) : null}
        {status === 'complete' && result && result.trim() !== lastText ? (
          <div className="jp-ThinkSubagent-result" aria-label="Result">
            <div className="jp-ThinkToolCard-label">Result</div>
            <Markdown
              text={result}
              rendermime={rendermime}
              onOpenPath={onOpenPath}
            />
          </div>
        ) : null}
        {status !== 'running' && status !== 'complete' ? (
          <ErrorNote
            message={error || `The subagent ended: ${status}.`}
            code={stream?.error?.code ?? status}
            rendermime={rendermime}
          />
        ) : null}
      </div>
    </section>
  );
}
