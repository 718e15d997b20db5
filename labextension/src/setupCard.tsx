/**
 * The setup card: choose a model endpoint (OpenAI, Ollama, any OpenAI-compatible server),
 * test it (the server lists its models) and save it on the server for this user.
 *
 * The key is typed here and sent once to the server; it is never stored in the browser and
 * never shown again (the server answers with its last four characters only).
 */

import React, { useState } from 'react';

import type { IEndpoint, IEndpointInput, IEndpointTest } from './tokens';

/** A starting point for the form. */
export interface IPreset {
  id: string;
  label: string;
  baseUrl: string;
  model: string;
  needsKey: boolean;
  hint: string;
}

/** The presets, in the order the card shows them. */
export const PRESETS: IPreset[] = [
  {
    id: 'openai',
    label: 'OpenAI',
    baseUrl: '',
    model: 'gpt-4o-mini',
    needsKey: true,
    hint: 'Needs an API key from platform.openai.com.'
  },
  {
    id: 'ollama',
    label: 'Ollama',
    baseUrl: 'http://localhost:11434/v1',
    model: 'llama3.1',
    needsKey: false,
    hint: 'A local Ollama server (ollama serve); no key needed.'
  },
  {
    id: 'compatible',
    label: 'vLLM / LiteLLM / other',
    baseUrl: 'http://localhost:8000/v1',
    model: '',
    needsKey: false,
    hint: 'Any OpenAI-compatible endpoint: its base URL usually ends in /v1.'
  }
];

/** The preset an endpoint looks like (for the tab shown first). */
export function presetFor(ep: IEndpoint | null): IPreset {
  if (!ep || !ep.configured) {
    return PRESETS[0];
  }
  if (!ep.base_url) {
    return PRESETS[0];
  }
  return ep.base_url.includes(':11434') ? PRESETS[1] : PRESETS[2];
}

/** What the card needs from the server. */
export interface ISetupApi {
  saveModel(body: IEndpointInput): Promise<IEndpoint>;
  testModel(body: IEndpointInput): Promise<IEndpointTest>;
  forgetModel(): Promise<IEndpoint>;
}

/** Props of the setup card. */
export interface ISetupCardProps {
  api: ISetupApi;
  /** The endpoint in force, if known. */
  current: IEndpoint | null;
  onSaved: (ep: IEndpoint) => void;
  /** Close without saving (only offered when a model is already configured). */
  onCancel?: () => void;
}

/** The form: preset tabs, base URL, key, model, Test connection, Save. */
export function SetupCard(props: ISetupCardProps): JSX.Element {
  const { api, current } = props;
  const first = presetFor(current);
  const [preset, setPreset] = useState<IPreset>(first);
  const [baseUrl, setBaseUrl] = useState(
    current?.configured ? current.base_url : first.baseUrl
  );
  const [key, setKey] = useState('');
  const [model, setModel] = useState(
    current?.configured ? current.model : first.model
  );
  const [models, setModels] = useState<string[] | null>(null);
  const [testing, setTesting] = useState(false);
  const [saving, setSaving] = useState(false);
  const [message, setMessage] = useState<{
    kind: 'ok' | 'error';
    text: string;
  } | null>(null);

  const sameUrl = !!current?.configured && current.base_url === baseUrl.trim();
  const keepsKey = sameUrl && current?.api_key_set && !key;
  const body = (): IEndpointInput => ({
    base_url: baseUrl.trim(),
    model: model.trim(),
    ...(key ? { api_key: key } : {})
  });

  const choose = (p: IPreset): void => {
    setPreset(p);
    setBaseUrl(p.baseUrl);
    setModel(p.model);
    setModels(null);
    setMessage(null);
  };

  const test = async (): Promise<void> => {
    setTesting(true);
    setMessage(null);
    try {
      const r = await api.testModel(body());
      if (r.ok) {
        const list = r.models ?? [];
        setModels(list);
        if (list.length && !list.includes(model.trim())) {
          setModel(list[0]);
        }
        setMessage({
          kind: 'ok',
          text: `Connected: ${list.length} model${list.length === 1 ? '' : 's'}.`
        });
      } else {
        setModels(null);
        setMessage({ kind: 'error', text: r.error ?? 'The test failed.' });
      }
    } catch (e) {
      setMessage({ kind: 'error', text: String(e) });
    } finally {
      setTesting(false);
    }
  };

  const save = async (): Promise<void> => {
    setSaving(true);
    setMessage(null);
    try {
      const ep = await api.saveModel(body());
      setKey('');
      props.onSaved(ep);
    } catch (e) {
      setMessage({ kind: 'error', text: String(e) });
    } finally {
      setSaving(false);
    }
  };

  const needsKey = preset.needsKey && !baseUrl.trim();
  const canSave = !!model.trim() && (!needsKey || !!key || !!keepsKey);
  return (
    <form
      className="jp-ThinkSetup"
      aria-label="Set up a model"
      onSubmit={e => {
        e.preventDefault();
        if (canSave && !saving) {
          void save();
        }
      }}
    >
      <div className="jp-ThinkSetup-title">Set up a model</div>
      <p className="jp-ThinkSetup-intro">
        Think talks to any OpenAI-compatible endpoint. This is saved on the
        server for you (never in the browser or a notebook) and used from your
        next message.
      </p>
      <div className="jp-ThinkSetup-presets" role="tablist">
        {PRESETS.map(p => (
          <button
            key={p.id}
            type="button"
            role="tab"
            aria-selected={p.id === preset.id}
            className={`jp-ThinkSetup-preset${p.id === preset.id ? ' jp-mod-active' : ''}`}
            onClick={() => choose(p)}
          >
            {p.label}
          </button>
        ))}
      </div>
      <div className="jp-ThinkSetup-hint">{preset.hint}</div>
      <label className="jp-ThinkSetup-field">
        <span>Base URL</span>
        <input
          className="jp-ThinkSetup-url"
          type="url"
          value={baseUrl}
          placeholder="empty: the OpenAI API"
          onChange={e => {
            setBaseUrl(e.target.value);
            setModels(null);
          }}
        />
      </label>
      <label className="jp-ThinkSetup-field">
        <span>API key{needsKey ? '' : ' (optional)'}</span>
        <input
          className="jp-ThinkSetup-key"
          type="password"
          autoComplete="off"
          value={key}
          placeholder={
            keepsKey
              ? `saved (${current?.api_key_hint}); type to replace`
              : needsKey
                ? 'sk-…'
                : 'not needed for most local servers'
          }
          onChange={e => setKey(e.target.value)}
        />
      </label>
      <label className="jp-ThinkSetup-field">
        <span>Model</span>
        {models && models.length ? (
          <select
            className="jp-ThinkSetup-model"
            value={model}
            onChange={e => setModel(e.target.value)}
          >
            {models.map(m => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        ) : (
          <input
            className="jp-ThinkSetup-model"
            value={model}
            placeholder="e.g. gpt-4o-mini, llama3.1"
            onChange={e => setModel(e.target.value)}
          />
        )}
      </label>
      {message ? (
        <div
          className={`jp-ThinkSetup-message jp-mod-${message.kind}`}
          role={message.kind === 'error' ? 'alert' : 'status'}
        >
          {message.text}
        </div>
      ) : null}
      <div className="jp-ThinkSetup-buttons">
        <button
          type="button"
          className="jp-Button jp-mod-styled jp-mod-reject jp-ThinkSetup-test"
          disabled={testing}
          onClick={() => void test()}
        >
          {testing ? 'Testing…' : 'Test connection'}
        </button>
        <span className="jp-ThinkComposer-spacer" />
        {props.onCancel ? (
          <button
            type="button"
            className="jp-Button jp-mod-styled jp-mod-reject"
            onClick={props.onCancel}
          >
            Cancel
          </button>
        ) : null}
        <button
          type="submit"
          className="jp-Button jp-mod-styled jp-mod-accept jp-ThinkSetup-save"
          disabled={!canSave || saving}
        >
          {saving ? 'Saving…' : 'Save'}
        </button>
      </div>
      {current?.source === 'environment' ? (
        <p className="jp-ThinkSetup-note">
          Now in use: <code>{current.model}</code> at{' '}
          <code>{current.effective_url}</code>, from the server&apos;s
          environment. Saving here takes precedence.
        </p>
      ) : null}
      {current?.source === 'saved' ? (
        <p className="jp-ThinkSetup-note">
          <button
            type="button"
            className="jp-ThinkLinkButton"
            onClick={() =>
              void api
                .forgetModel()
                .then(props.onSaved)
                .catch(e => setMessage({ kind: 'error', text: String(e) }))
            }
          >
            Forget the saved endpoint
          </button>{' '}
          (the server&apos;s environment applies again).
        </p>
      ) : null}
    </form>
  );
}
