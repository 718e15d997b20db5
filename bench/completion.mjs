#!/usr/bin/env node
/**
 * Inline completion benchmark in a real JupyterLab and headless Chromium, against the
 * scripted model (which answers at once; the server reports how long it waited on it).
 *
 * Prints, each beside a baseline measured in the same run:
 *  1. latency outside the model (target <= 30 ms), median over BENCH_RUNS rounds:
 *     - invoked (Alt+\, no debounce): the key -> ghost text in the cell, minus the
 *       server's time on the model (`model_ms`);
 *     - typing: the last key -> ghost text, minus the debouncer delay and `model_ms`;
 *     baselines: a fetch round trip from the page to a trivial route (`GET /api/status`),
 *     and a direct `POST /api/think/complete` round trip minus `model_ms` (server only).
 *  2. requests while typing 60 characters at 10 a second (real keyboard), per round:
 *     those the browser sent, beside one request per keystroke (no debounce).
 *
 * Backend: the real server extension and store (labextension/ui-tests/harness.mjs). Build
 * the extension first (`npm run build` in labextension/). Usage: node bench/completion.mjs
 */

import { launchLab, notebookText } from "../labextension/ui-tests/harness.mjs";

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
/** The provider's default debouncer delay (src/inlineCompletion.ts). */
const DEBOUNCE_MS = 350;
const TYPED = "total = sum(x * x for x in range(10)) + radius * 3 - 1  # ok";

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const ms = (x) => `${x.toFixed(1)} ms`;

/** In the page: the time of each key, and of each ghost text's appearance. */
function instrument() {
  window.__bench = { keys: [], ghosts: [] };
  document.addEventListener(
    "keydown",
    () => window.__bench.keys.push(performance.now()),
    true,
  );
  new MutationObserver((records) => {
    for (const r of records) {
      for (const n of r.addedNodes) {
        if (n.nodeType === 1 && n.classList.contains("jp-GhostText")) {
          window.__bench.ghosts.push(performance.now());
        }
      }
    }
  }).observe(document.body, { childList: true, subtree: true });
}

async function main() {
  const cells = ["import math\nradius = 2", ...Array(3 * RUNS + 2).fill("")];
  const ui = await launchLab({
    files: { "bench.ipynb": notebookText(cells, "python3") },
    notebook: "bench.ipynb",
  });
  const { page, lab } = ui;
  try {
    await lab.answer("complete", { text: "math.pi * radius ** 2" });
    const requests = [];
    page.on("request", (r) => {
      if (r.url().includes("/api/think/complete")) requests.push(r);
    });
    /** The answer to the completion request whose text before the cursor is `prefix`. */
    const answerTo = (prefix) =>
      page
        .waitForResponse(
          (r) =>
            r.url().includes("/api/think/complete") &&
            JSON.parse(r.request().postData()).prefix === prefix,
        )
        .then(async (r) => ({
          ...(await r.json()),
          timing: r.request().timing(),
        }));
    await page.evaluate(instrument);
    const origin = await page.evaluate(() => performance.timeOrigin);
    const split = { toRequest: [], roundTrip: [], toGhost: [] };
    let cell = 1;
    const focus = async () => {
      const editor = page
        .locator(".jp-Notebook .jp-Cell .cm-content")
        .nth(cell++);
      await editor.click();
    };
    /** The first ghost text shown after page time `t`. */
    const ghostAfter = async (t) => {
      const found = await page.waitForFunction(
        (t0) => window.__bench.ghosts.find((g) => g > t0),
        t,
      );
      return found.jsonValue();
    };

    // Baselines: a trivial route, and the completion route called directly.
    const statusTrips = [];
    const directTrips = [];
    for (let i = 0; i < RUNS * 4; i++) {
      statusTrips.push(
        await page.evaluate(async (token) => {
          const t = performance.now();
          await fetch(`/api/status?token=${token}`);
          return performance.now() - t;
        }, lab.token),
      );
      directTrips.push(
        await page.evaluate(async (token) => {
          const t = performance.now();
          const r = await fetch(`/api/think/complete?token=${token}`, {
            method: "POST",
            body: JSON.stringify({ prefix: "area = ", cells: ["import math"] }),
          });
          const { model_ms: model } = await r.json();
          return performance.now() - t - model;
        }, lab.token),
      );
    }

    const invoked = [];
    const typedLatency = [];
    const counts = [];
    for (let run = 0; run < RUNS; run++) {
      // Invoked (no debounce): the requests of the keys typed just before are superseded.
      await focus();
      let answered = answerTo("area = ");
      await page.keyboard.type("area = ");
      const t0 = await page.evaluate(() => performance.now());
      await page.keyboard.press("Alt+\\");
      const keyAt = await page.evaluate(
        (t) => window.__bench.keys.find((k) => k >= t),
        t0,
      );
      const shown = await ghostAfter(keyAt);
      invoked.push(shown - keyAt - (await answered).model_ms);
      await page.keyboard.press("Escape");

      // Typing 60 characters at 10 a second: the requests, and the last key -> ghost.
      await focus();
      const sentBefore = requests.length;
      const t1 = await page.evaluate(() => performance.now());
      answered = answerTo(TYPED);
      await page.keyboard.type(TYPED, { delay: 100 });
      const lastKey = await page.evaluate(() => window.__bench.keys.at(-1));
      const ghost = await ghostAfter(lastKey);
      const answer = await answered;
      typedLatency.push(ghost - lastKey - DEBOUNCE_MS - answer.model_ms);
      // Where the time goes: key -> request start (debounce and provider), the round trip
      // (network and server, model included), response end -> ghost text (render).
      const started = answer.timing.startTime - origin;
      const ended = started + answer.timing.responseEnd;
      split.toRequest.push(started - lastKey - DEBOUNCE_MS);
      split.roundTrip.push(ended - started - answer.model_ms);
      split.toGhost.push(ghost - ended);
      const keys = await page.evaluate(
        (t) => window.__bench.keys.filter((k) => k >= t).length,
        t1,
      );
      counts.push({ sent: requests.length - sentBefore, keys });
      await page.keyboard.press("Escape");
    }

    console.log(`inline completion, ${RUNS} rounds (medians)`);
    console.log(
      `  baseline: fetch round trip to GET /api/status        ${ms(median(statusTrips))}`,
    );
    console.log(
      `  baseline: POST /api/think/complete direct, minus model ${ms(median(directTrips))}`,
    );
    console.log(
      `  invoked (Alt+\\): key -> ghost text, minus model       ${ms(median(invoked))}`,
    );
    console.log(
      `  typing: last key -> ghost, minus ${DEBOUNCE_MS} ms debounce and model ${ms(median(typedLatency))}`,
    );
    console.log(
      `    of which: key -> request sent, minus debounce ${ms(median(split.toRequest))}; ` +
        `round trip minus model ${ms(median(split.roundTrip))}; ` +
        `response -> ghost ${ms(median(split.toGhost))}`,
    );
    console.log(
      `  60 characters typed: ${counts.map((c) => c.sent).join(", ")} requests per round` +
        ` (baseline, one per keystroke: ${counts.map((c) => c.keys).join(", ")})`,
    );
  } finally {
    await ui.close();
  }
}

await main();
