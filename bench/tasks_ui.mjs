#!/usr/bin/env node
/**
 * UI benchmark of the tasks area: what four subagents streaming at once cost the
 * browser, next to a baseline measured in the same run.
 *
 * Both scenarios deliver the same text (4 x WORDS words) to a real JupyterLab in headless
 * Chromium; only the model is scripted:
 *   baseline: one chat reply streams all of it into the message list;
 *   tasks:    the request delegates four subagents (one step) that stream a quarter each
 *             at the same time, the tasks area shows their badges and one subagent's
 *             drill-in is open.
 * Printed per scenario (medians of BENCH_RUNS runs): main-thread time of the page while the
 * text streams (Chrome's TaskDuration), per 1,000 characters received, and the 95th
 * percentile of frame intervals. Target: the tasks scenario costs no more than 2x the
 * baseline per character and keeps p95 frames under 50 ms.
 *
 * Build the extension first (`npm run build` in labextension/). Usage:
 *   node bench/tasks_ui.mjs            (BENCH_RUNS=3, WORDS=150 by default)
 */

import {
  SCRIPTS,
  launchBrowser,
  openChat,
  openLab,
  startLab,
} from "../labextension/ui-tests/harness.mjs";

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const WORDS = Number(process.env.WORDS ?? 150);
const DELAY = 0.02;
const KEYS = ["SUBA", "SUBB", "SUBC", "SUBD"];

const words = (prefix, n) =>
  Array.from({ length: n }, (_, i) => `${i ? " " : ""}${prefix}${i}`);

SCRIPTS.benchReply = [{ tokens: words("w", 4 * WORDS), delay: DELAY / 4 }];
SCRIPTS.benchTasks = [
  {
    tool_calls: KEYS.map((k) => [
      "delegate_to_subagent",
      { task: `Part ${k}`, instructions: `${k}: write your part` },
    ]),
  },
  { tool_calls: [["wait_for_subagents", {}]] },
  { text: "All four parts are written." },
  ...KEYS.map((k) => ({
    conversation: k,
    tokens: words(k.toLowerCase(), WORDS),
    delay: DELAY,
  })),
];

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

/** Count text frames and characters on the page's sockets; sample frame intervals. */
function instrument() {
  const NativeWS = window.WebSocket;
  window.__tb = { chars: 0, frames: 0, intervals: [], sampling: false };
  window.WebSocket = class extends NativeWS {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (ev) => {
        try {
          const f = JSON.parse(ev.data);
          if (f.type === "text_delta" || f.type === "subagent_text_delta") {
            window.__tb.chars += f.delta.length;
            window.__tb.frames += 1;
          }
        } catch {
          // not JSON
        }
      });
    }
  };
  let last = 0;
  const tick = (t) => {
    if (window.__tb.sampling && last) {
      window.__tb.intervals.push(t - last);
    }
    last = t;
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}

async function taskDuration(cdp) {
  const { metrics } = await cdp.send("Performance.getMetrics");
  return metrics.find((m) => m.name === "TaskDuration").value * 1000;
}

async function newSession(page, lab) {
  const known = (await lab.api("GET", "sessions")).sessions.map((s) => s.id);
  await page.getByRole("button", { name: "New session" }).click();
  await page.waitForFunction((known) => {
    const el = document.querySelector(".jp-ThinkSessions-select");
    return el && el.value && !known.includes(el.value);
  }, known);
  await page.waitForSelector('.jp-ThinkStatus[data-status="idle"]');
}

/** One scenario: send, wait for the end of the text, measure. */
async function measure(page, cdp, lab, kind, started, done) {
  await newSession(page, lab);
  await lab.script(kind);
  await page.evaluate(() => {
    Object.assign(window.__tb, { chars: 0, frames: 0, intervals: [] });
  });
  await page.fill(".jp-ThinkComposer-input", `bench ${kind}`);
  await page.keyboard.press("Enter");
  await started();
  await page.evaluate(() => {
    window.__tb.sampling = true;
  });
  const t0 = await taskDuration(cdp);
  const c0 = await page.evaluate(() => window.__tb.chars);
  await done();
  const t1 = await taskDuration(cdp);
  const r = await page.evaluate(() => {
    window.__tb.sampling = false;
    return { chars: window.__tb.chars, intervals: window.__tb.intervals };
  });
  await page.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
    timeout: 120000,
  });
  const chars = r.chars - c0;
  return {
    msPerKChar: ((t1 - t0) / Math.max(chars, 1)) * 1000,
    p95: pct(r.intervals, 95),
  };
}

async function main() {
  const lab = await startLab();
  const browser = await launchBrowser();
  try {
    const context = await browser.newContext({
      viewport: { width: 1400, height: 900 },
    });
    await context.addInitScript(instrument);
    const page = await openLab(context, lab);
    await openChat(page);
    const cdp = await context.newCDPSession(page);
    await cdp.send("Performance.enable");
    const base = [];
    const tasks = [];
    const last = `w${4 * WORDS - 1}`;
    for (let i = 0; i < RUNS; i++) {
      base.push(
        await measure(
          page,
          cdp,
          lab,
          "benchReply",
          () =>
            page.waitForSelector(
              ".jp-ThinkMessage.jp-mod-assistant .jp-ThinkMarkdown",
              {
                timeout: 120000,
              },
            ),
          () =>
            page.waitForFunction(
              (last) =>
                [
                  ...document.querySelectorAll(
                    ".jp-ThinkMessage.jp-mod-assistant",
                  ),
                ]
                  .pop()
                  ?.textContent.includes(last),
              last,
              { timeout: 120000 },
            ),
        ),
      );
      tasks.push(
        await measure(
          page,
          cdp,
          lab,
          "benchTasks",
          async () => {
            const open = page.getByRole("button", {
              name: "Open the subagent of Part SUBA",
            });
            await open.waitFor({ timeout: 120000 });
            await open.click();
            await page.waitForSelector(".jp-ThinkSubagent .jp-ThinkMarkdown", {
              timeout: 120000,
            });
          },
          () =>
            page.waitForFunction(
              () =>
                document.querySelectorAll(
                  '.jp-ThinkTask .jp-ThinkSubagentBadge[data-status="complete"]',
                ).length === 4,
              null,
              { timeout: 120000 },
            ),
        ),
      );
      await page.getByRole("button", { name: "Back to the chat" }).click();
    }
    const bCost = median(base.map((r) => r.msPerKChar));
    const tCost = median(tasks.map((r) => r.msPerKChar));
    const tP95 = median(tasks.map((r) => r.p95));
    console.log(`runs: ${RUNS}; ${4 * WORDS} words per scenario`);
    console.log(
      `4 subagents streaming, drill-in open: ${tCost.toFixed(1)} ms main thread per 1,000 chars; frame p95 ${tP95.toFixed(1)} ms`,
    );
    console.log(
      `  baseline one chat reply, same text: ${bCost.toFixed(1)} ms per 1,000 chars; frame p95 ${median(base.map((r) => r.p95)).toFixed(1)} ms; ratio ${(tCost / bCost).toFixed(2)}x (target <= 2x: ${tCost <= 2 * bCost ? "met" : "MISSED"}; p95 < 50 ms: ${tP95 < 50 ? "met" : "MISSED"})`,
    );
  } finally {
    await browser.close();
    await lab.stop();
  }
}

await main();
