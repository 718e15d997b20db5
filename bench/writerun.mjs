#!/usr/bin/env node
/**
 * Write-then-run with the file open in a real JupyterLab tab (headless Chromium), 100
 * rounds of each (the browser test, labextension/ui-tests/writerun.e2e.test.mjs, runs
 * what fits CI):
 *  1. read_file -> write_file -> bash `cat`: runs that printed an old text, runs that
 *     reported a file changed (they changed none), time per round;
 *  2. the same with edit_file while a person types in the file (keyboard typing in the
 *     editor): runs that missed the agent's edit, and whether the editor and the disk end
 *     with both the typing and the agent's last edit.
 *
 * Backend: the real server extension, think kernel and store (ui-tests/harness.mjs); only
 * the model is scripted. Usage: node bench/writerun.mjs [rounds] (default 100)
 */

import fs from "node:fs";
import path from "node:path";

import {
  launchBrowser,
  openFile,
  startLab,
} from "../labextension/ui-tests/harness.mjs";
import {
  newSession,
  typingRounds,
  waitDisk,
  waitEditor,
  writeRounds,
} from "../labextension/ui-tests/writerun.mjs";

const ROUNDS = Number(process.argv[2] ?? 100);

async function withLab(fn) {
  const lab = await startLab();
  const browser = await launchBrowser();
  try {
    const context = await browser.newContext({
      viewport: { width: 1400, height: 900 },
    });
    return await fn(lab, context);
  } finally {
    await browser.close();
    await lab.stop();
  }
}

const writes = await withLab(async (lab, context) => {
  fs.writeFileSync(path.join(lab.root, "open.txt"), "start\n");
  const { editor } = await openFile(context, lab, "open.txt");
  await editor.getByText("start").waitFor();
  const sid = await newSession(lab);
  const t0 = performance.now();
  const r = await writeRounds(lab, sid, "open.txt", ROUNDS);
  return { ...r, ms: (performance.now() - t0) / ROUNDS };
});
console.log(
  `write_file -> bash cat, file open in a tab: ${writes.total - writes.stale.length} of ` +
    `${writes.total} runs read the write; ${writes.reported.length} reported a file ` +
    `changed; ${writes.ms.toFixed(0)} ms per round (three model steps)`,
);
for (const s of writes.stale.slice(0, 3)) {
  console.log(`  stale round ${s.round}: ${JSON.stringify(s.out)}`);
}

const typing = await withLab(async (lab, context) => {
  fs.writeFileSync(path.join(lab.root, "typed.txt"), "title\nagent 0\n");
  const { page, editor } = await openFile(context, lab, "typed.txt");
  await editor.getByText("agent 0").waitFor();
  const sid = await newSession(lab);
  const t0 = performance.now();
  const r = await typingRounds(lab, page, editor, sid, "typed.txt", ROUNDS);
  const ms = (performance.now() - t0) / ROUNDS;
  const want = `title${r.typed}\nagent ${ROUNDS}\n`;
  let kept = "both kept in the editor and on disk";
  try {
    await waitEditor(page, want);
    await waitDisk(lab, "typed.txt", want);
  } catch (e) {
    kept = `NOT kept: ${e.message}`;
  }
  return { ...r, ms, kept };
});
console.log(
  `edit_file -> bash cat while a person types (${typing.typed.length} keys): ` +
    `${ROUNDS - typing.stale.length} of ${ROUNDS} runs read the edit; ` +
    `${typing.reported.length} reported a file changed; typing and edits ${typing.kept}; ` +
    `${typing.ms.toFixed(0)} ms per round`,
);
for (const s of typing.stale.slice(0, 3)) {
  console.log(`  missed round ${s.round}: ${JSON.stringify(s.out)}`);
}
process.exit(writes.stale.length || typing.stale.length ? 1 : 0);
