// @vitest-environment jsdom
import { Sanitizer } from '@jupyterlab/apputils';
import { describe, expect, it } from 'vitest';

import {
  inertSanitizer,
  isRemote,
  withoutRemoteMedia
} from '../src/inertSanitizer';

describe('inertSanitizer', () => {
  const sanitizer = inertSanitizer(new Sanitizer());

  it('turns remote images into links and keeps inline and local ones', () => {
    const out = sanitizer.sanitize(
      '<p><img src="https://evil.example/x?leak=1" alt="chart"><img src="data:image/png;base64,AAAA"><img src="plot.png"></p>'
    );
    expect(out).not.toContain('<img src="https');
    expect(out).toContain(
      '<a href="https://evil.example/x?leak=1">[image: chart]</a>'
    );
    expect(out).toContain('src="data:image/png;base64,AAAA"');
    expect(out).toContain('src="plot.png"');
  });

  it('still removes handlers (the base sanitiser runs first)', () => {
    const out = sanitizer.sanitize(
      '<img src="//evil.example/a" onerror="top.x=1">'
    );
    expect(out).not.toContain('onerror');
    expect(out).not.toContain('<img');
  });

  it('drops remote media attributes and every srcset', () => {
    expect(
      withoutRemoteMedia(
        '<video poster="https://e/p" src="https://e/v"></video>'
      )
    ).toBe('<video></video>');
    expect(
      withoutRemoteMedia('<img src="a.png" srcset="https://e/x 2x">')
    ).toBe('<img src="a.png">');
    expect(withoutRemoteMedia('<b>plain</b>')).toBe('<b>plain</b>');
  });

  it('drops styles that could load a URL', () => {
    expect(
      withoutRemoteMedia(
        '<div style="background-image:url(https://e/x)">a</div><style>b{background:url(https://e/y)}</style><i style="color:red">c</i>'
      )
    ).toBe('<div>a</div><i style="color:red">c</i>');
    const out = sanitizer.sanitize(
      '<div style="background-image: url(https://e/x)">a</div>'
    );
    expect(out).not.toContain('url(');
  });

  it('drops forms', () => {
    expect(
      withoutRemoteMedia(
        '<form action="https://e/f"><input name="q"><button>go</button></form>ok'
      )
    ).toBe('ok');
  });

  it('knows remote from local', () => {
    expect(isRemote('https://x')).toBe(true);
    expect(isRemote(' //x')).toBe(true);
    expect(isRemote('HTTP://x')).toBe(true);
    expect(isRemote('data:image/gif;base64,R0')).toBe(false);
    expect(isRemote('data:text/html,x')).toBe(true);
    expect(isRemote('files/x.png')).toBe(false);
  });
});
