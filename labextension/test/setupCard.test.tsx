// @vitest-environment jsdom
import React from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { PRESETS, presetFor, SetupCard } from '../src/setupCard';
import type { IEndpoint } from '../src/tokens';
import { button, click, IMounted, mount, settle, type } from './render';

const NONE: IEndpoint = {
  configured: false,
  source: '',
  base_url: '',
  effective_url: 'https://api.openai.com/v1',
  model: 'gpt-4o-mini',
  api_key_set: false,
  api_key_hint: ''
};

function fakeApi() {
  return {
    testModel: vi.fn(async () => ({ ok: true, models: ['m-a', 'm-b'] })),
    saveModel: vi.fn(async (b: { base_url: string; model?: string }) => ({
      ...NONE,
      configured: true,
      source: 'saved' as const,
      base_url: b.base_url,
      effective_url: b.base_url,
      model: b.model ?? '',
      api_key_set: true,
      api_key_hint: '…6789'
    })),
    forgetModel: vi.fn(async () => NONE)
  };
}

let m: IMounted | null = null;
afterEach(() => {
  m?.unmount();
  m = null;
  localStorage.clear();
});

describe('SetupCard', () => {
  it('offers the three presets and no Cancel when nothing is configured', () => {
    m = mount(<SetupCard api={fakeApi()} current={NONE} onSaved={vi.fn()} />);
    const tabs = [...m.container.querySelectorAll('[role="tab"]')].map(
      t => t.textContent
    );
    expect(tabs).toEqual(['OpenAI', 'Ollama', 'vLLM / LiteLLM / other']);
    expect(() => button(m!.container, 'Cancel')).toThrow();
    // OpenAI needs a key: Save waits for one.
    expect(button(m.container, 'Save').disabled).toBe(true);
  });

  it('tests the endpoint, lists its models, saves with the key typed once', async () => {
    const api = fakeApi();
    const onSaved = vi.fn();
    m = mount(<SetupCard api={api} current={NONE} onSaved={onSaved} />);
    click(button(m.container, 'Ollama'));
    const url =
      m.container.querySelector<HTMLInputElement>('.jp-ThinkSetup-url')!;
    expect(url.value).toBe('http://localhost:11434/v1');
    type(url, 'http://127.0.0.1:9999/v1');
    type(
      m.container.querySelector<HTMLInputElement>('.jp-ThinkSetup-key')!,
      'sk-secret-0123456789'
    );
    click(button(m.container, 'Test connection'));
    await settle();
    expect(api.testModel).toHaveBeenCalledWith({
      base_url: 'http://127.0.0.1:9999/v1',
      model: 'llama3.1',
      api_key: 'sk-secret-0123456789'
    });
    const options = [
      ...m.container.querySelectorAll('select.jp-ThinkSetup-model option')
    ].map(o => o.textContent);
    expect(options).toEqual(['m-a', 'm-b']);
    expect(m.container.textContent).toContain('Connected: 2 models.');
    click(button(m.container, 'Save'));
    await settle();
    expect(api.saveModel).toHaveBeenCalledWith({
      base_url: 'http://127.0.0.1:9999/v1',
      model: 'm-a',
      api_key: 'sk-secret-0123456789'
    });
    expect(onSaved).toHaveBeenCalledTimes(1);
    // The key went to the server only; the field is cleared.
    expect(JSON.stringify({ ...localStorage })).not.toContain('sk-secret');
    expect(
      m.container.querySelector<HTMLInputElement>('.jp-ThinkSetup-key')!.value
    ).toBe('');
  });

  it('says why a test failed', async () => {
    const api = fakeApi();
    api.testModel.mockResolvedValueOnce({
      ok: false,
      error: 'cannot connect to http://x/v1'
    } as never);
    m = mount(<SetupCard api={api} current={NONE} onSaved={vi.fn()} />);
    click(button(m.container, 'Ollama'));
    click(button(m.container, 'Test connection'));
    await settle();
    const alert = m.container.querySelector('[role="alert"]');
    expect(alert?.textContent).toBe('cannot connect to http://x/v1');
  });

  it('keeps a saved key for the same URL without showing it', () => {
    const saved: IEndpoint = {
      ...NONE,
      configured: true,
      source: 'saved',
      base_url: 'http://h/v1',
      effective_url: 'http://h/v1',
      model: 'big',
      api_key_set: true,
      api_key_hint: '…abcd'
    };
    m = mount(
      <SetupCard
        api={fakeApi()}
        current={saved}
        onSaved={vi.fn()}
        onCancel={vi.fn()}
      />
    );
    const key =
      m.container.querySelector<HTMLInputElement>('.jp-ThinkSetup-key')!;
    expect(key.value).toBe('');
    expect(key.placeholder).toContain('…abcd');
    expect(button(m.container, 'Save').disabled).toBe(false);
    expect(button(m.container, 'Cancel')).toBeTruthy();
  });

  it('picks the preset an endpoint looks like', () => {
    expect(presetFor(null)).toBe(PRESETS[0]);
    expect(
      presetFor({ ...NONE, configured: true, base_url: 'http://h:11434/v1' })
    ).toBe(PRESETS[1]);
    expect(
      presetFor({ ...NONE, configured: true, base_url: 'http://h/v1' })
    ).toBe(PRESETS[2]);
  });
});
