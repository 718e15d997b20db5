/**
 * The harness fails a test file whose Jupyter server logged a traceback: the check itself.
 */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { serverTracebacks } from './harness.mjs';

const LOG = `[I 2026-11-28 16:12:59.852 ServerApp] Kernel started: k1
[E 2026-11-28 16:13:00.001 ThinkExtension] Think: could not close the idle room text:file:1
    Traceback (most recent call last):
      File "/x/roomfiles.py", line 467, in _close_when_idle
    RuntimeError: No path found for file ID '1'
[I 2026-11-28 16:13:00.100 ServerApp] Saving the content
Task exception was never retrieved
future: <Task finished name='Task-1'>
Traceback (most recent call last):
  File "/x/websocket.py", line 1142, in wrapper
tornado.websocket.WebSocketClosedError
[E 2026-11-28 16:13:01.000 ServerApp] Failed to write message
    Traceback (most recent call last):
      File "/v/site-packages/jupyter_server_ydoc/handlers.py", line 353, in send
    tornado.websocket.WebSocketClosedError
[I 2026-11-28 16:13:02.000 ServerApp] Kernel shutdown: k1
`;

describe('the server log check', () => {
  test('finds each traceback with the line that introduced it', () => {
    const found = serverTracebacks(LOG);
    assert.equal(found.length, 2);
    assert.match(found[0], /could not close the idle room[\s\S]*RuntimeError/);
    assert.match(found[1], /never retrieved[\s\S]*WebSocketClosedError/);
  });

  test("a kernel or room tab's closed write is upstream's; one through our code is not", () => {
    const closed = `[I 2026-11-28 18:53:37.131 ServerApp] Starting buffering for k1:s1
Task exception was never retrieved
future: <Task finished name='Task-3191' coro=<WebSocketProtocol13.write_message.<locals>.wrapper() done, defined at /v/tornado/websocket.py:1138> exception=WebSocketClosedError()>
Traceback (most recent call last):
  File "/v/site-packages/tornado/websocket.py", line 1140, in wrapper
    await fut
tornado.iostream.StreamClosedError: Stream is closed

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/v/site-packages/tornado/websocket.py", line 1142, in wrapper
    raise WebSocketClosedError()
tornado.websocket.WebSocketClosedError
[I 2026-11-28 18:53:38.000 ServerApp] Kernel shutdown: k1
`;
    assert.deepEqual(serverTracebacks(closed), []);
    const ours = closed.replace(
      'in wrapper\n    raise',
      'in wrapper\n  File "/w/think_kernel/kernel/link.py", line 9, in _write\n    raise'
    );
    assert.equal(serverTracebacks(ours).length, 1);
    // The same unread write of a collaboration room whose last tab closed.
    const room = closed.replace(
      'Starting buffering for k1:s1',
      'Cleaning room: text:file:f1'
    );
    assert.deepEqual(serverTracebacks(room), []);
    const elsewhere = closed.replace(
      'Starting buffering for k1:s1',
      'Think: a run of s_1 ended'
    );
    assert.equal(serverTracebacks(elsewhere).length, 1);
  });

  test('a test may allow the tracebacks it provokes; a clean log has none', () => {
    assert.equal(serverTracebacks(LOG, [/./]).length, 0);
    assert.deepEqual(serverTracebacks('[I 2026 ServerApp] fine\n'), []);
  });
});
