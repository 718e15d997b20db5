/**
 * Attachment chips: what goes with the next message (composer), or went with one (message).
 */

import {
  closeIcon,
  fileIcon,
  imageIcon,
  LabIcon,
  listIcon,
  notebookIcon
} from '@jupyterlab/ui-components';
import React from 'react';

import {
  attachmentLabel,
  formatBytes,
  type IPendingAttachment
} from './attachments';
import type { IAttachment } from './tokens';

const ICON: Record<string, LabIcon> = {
  image: imageIcon,
  file: fileIcon,
  cells: notebookIcon,
  variables: listIcon
};

function KindIcon(props: { kind: string }): JSX.Element {
  const icon = ICON[props.kind] ?? fileIcon;
  return <icon.react tag="span" className="jp-ThinkAttachment-icon" />;
}

/** The composer's pending attachments, each removable. */
export function PendingAttachments(props: {
  items: IPendingAttachment[];
  onRemove: (id: string) => void;
  /** A chip shown before the files (the active document). */
  first?: React.ReactNode;
}): JSX.Element | null {
  if (!props.items.length && !props.first) {
    return null;
  }
  return (
    <div className="jp-ThinkAttachments" aria-label="Attachments">
      {props.first}
      {props.items.map(a => (
        <span
          key={a.id}
          className={`jp-ThinkAttachment${a.error ? ' jp-mod-error' : ''}`}
          data-kind={a.kind}
          title={
            a.summary ??
            (a.error ? a.error : `${a.name} (${formatBytes(a.size)})`)
          }
        >
          <KindIcon kind={a.kind} />
          <span className="jp-ThinkAttachment-name">{a.name}</span>
          {a.error ? (
            <span className="jp-ThinkAttachment-error">{a.error}</span>
          ) : null}
          <button
            className="jp-ThinkIconButton"
            aria-label={`Remove ${a.name}`}
            onClick={() => props.onRemove(a.id)}
          >
            <closeIcon.react tag="span" />
          </button>
        </span>
      ))}
    </div>
  );
}

/** What a sent message had attached. */
export function SentAttachments(props: {
  items?: IAttachment[];
}): JSX.Element | null {
  if (!props.items?.length) {
    return null;
  }
  return (
    <div className="jp-ThinkAttachments jp-mod-sent">
      {props.items.map((a, i) => (
        <span key={i} className="jp-ThinkAttachment" data-kind={a.kind}>
          <KindIcon kind={a.kind} />
          <span className="jp-ThinkAttachment-name">{attachmentLabel(a)}</span>
        </span>
      ))}
    </div>
  );
}
