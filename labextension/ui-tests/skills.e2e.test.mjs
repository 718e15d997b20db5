/**
 * Browser test of skills in the sidebar against a real JupyterLab, real think kernels and
 * the real store; only the model is scripted (see harness.mjs): the agent writes a skill,
 * the approval card shows its SKILL.md, and once approved the Skills area lists it with
 * where it comes from, beside an invalid skill and its reason. A skill the agent's code
 * wrote (no card) is listed as needing review, and approved from the Skills area.
 *
 * Run: `npm run test:e2e` (needs `npm run build` first and Chromium at /usr/bin/chromium).
 */

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';

import { SCRIPTS, launchLab, shot } from './harness.mjs';

const TIMEOUT = 60000;
const SKILL_PATH = '.think/skills/csv-tips/SKILL.md';
const SKILL = [
  '---',
  'name: csv-tips',
  'description: How to read the team CSV exports.',
  '---',
  'Use pandas.read_csv(path, sep=";").',
  ''
].join('\n');

// A page the agent read steered its code: it writes a skill with no card (the default
// policy runs code without asking).
const PLANTED_PATH = '.think/skills/plots/SKILL.md';
const PLANTED = [
  '---',
  'name: plots',
  'description: Plot with the team colours.',
  '---',
  'Use matplotlib with the tab10 colours.',
  ''
].join('\n');
const PLANT = [
  'import os',
  "os.makedirs('.think/skills/plots', exist_ok=True)",
  `open(${JSON.stringify(PLANTED_PATH)}, 'w').write(${JSON.stringify(PLANTED)})`
].join('\n');

Object.assign(SCRIPTS, {
  plantSkill: [
    { tool_calls: [['execute_code', { code: PLANT }]] },
    { text: 'Done.' }
  ],
  writeSkill: [
    {
      text: 'I will save this as a skill.',
      tool_calls: [['write_file', { path: SKILL_PATH, content: SKILL }]]
    },
    { text: 'Saved the csv-tips skill.' }
  ]
});

let ui;
let lab;
let page;

describe('Skills in the sidebar', () => {
  before(async () => {
    ui = await launchLab({
      files: {
        'AGENTS.md': 'Keep answers short.\n',
        '.think/skills/bad-skill/SKILL.md':
          '---\nname: bad-skill\n---\nNo description.\n'
      },
      sidebar: true
    });
    ({ lab, page } = ui);
  });

  afterEach(t => lab?.reportFailure(t));

  after(() => ui?.close());

  test('a new SKILL.md asks first; approved, the Skills area lists it', async () => {
    await page.getByRole('button', { name: 'New session' }).click();
    await page.waitForSelector('.jp-ThinkStatus[data-status="idle"]');
    // Before the skill exists: the invalid one and AGENTS.md are listed.
    const area = page.locator('.jp-ThinkSkills');
    await area.waitFor({ timeout: TIMEOUT });
    assert.match(
      await area.locator('.jp-ThinkSkills-counts').textContent(),
      /0 skills, 1 invalid, 1 AGENTS\.md/
    );

    await lab.script('writeSkill');
    await page.fill('.jp-ThinkComposer-input', 'save the CSV tips as a skill');
    await page.keyboard.press('Enter');
    const card = page.locator('.jp-ThinkApproval[data-status="pending"]');
    await card.waitFor({ timeout: TIMEOUT });
    assert.match(
      await card.locator('.jp-ThinkApproval-title').textContent(),
      /create skill 'csv-tips' \(\.think\/skills\/csv-tips\/SKILL\.md\)/
    );
    const added = (
      await card.locator('.jp-ThinkDiff-add').allTextContents()
    ).join('\n');
    assert.match(added, /\+description: How to read the team CSV exports\./);
    assert.match(added, /\+Use pandas\.read_csv/);
    assert.equal(fs.existsSync(path.join(lab.root, SKILL_PATH)), false);
    await shot(page, 'skill-approval', card);
    await card.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
      timeout: TIMEOUT
    });
    assert.equal(
      fs.readFileSync(path.join(lab.root, SKILL_PATH), 'utf8'),
      SKILL
    );

    // The area reads again when the run ends: the new skill, where it comes from.
    await page.waitForFunction(
      () =>
        document
          .querySelector('.jp-ThinkSkills-counts')
          ?.textContent?.startsWith('1 skill,'),
      null,
      { timeout: TIMEOUT }
    );
    await area.getByRole('button', { name: /Skills/ }).click();
    const skill = area.locator('.jp-ThinkSkill', { hasText: '/csv-tips' });
    assert.equal(
      await skill.locator('.jp-ThinkSkill-source').textContent(),
      'workspace'
    );
    const bad = area.locator('.jp-ThinkSkill.jp-mod-invalid', {
      hasText: 'bad-skill'
    });
    assert.match(
      await bad.locator('.jp-ThinkSkill-note').textContent(),
      /invalid: 'description' is missing from the front matter/
    );
    assert.equal(
      await area.locator('.jp-ThinkSkill', { hasText: 'AGENTS.md' }).count(),
      1
    );
    await shot(page, 'skills-list', area);
  });

  test('a skill its code wrote waits for review; approved there, it is listed', async () => {
    await lab.script('plantSkill');
    await page.fill('.jp-ThinkComposer-input', 'follow the page you read');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.jp-ThinkChat-body[data-running="false"]', {
      timeout: TIMEOUT
    });
    assert.equal(
      fs.readFileSync(path.join(lab.root, PLANTED_PATH), 'utf8'),
      PLANTED
    );
    const area = page.locator('.jp-ThinkSkills');
    await page.waitForFunction(
      () =>
        document
          .querySelector('.jp-ThinkSkills-counts')
          ?.textContent?.startsWith('1 skill, 1 to review,'),
      null,
      { timeout: TIMEOUT }
    );
    if (!(await area.locator('.jp-ThinkSkills-list').isVisible())) {
      await area.getByRole('button', { name: /Skills/ }).click();
    }
    const item = area.locator('.jp-ThinkSkill.jp-mod-review', {
      hasText: '/plots'
    });
    assert.equal(
      await item.locator('.jp-ThinkSkill-note').textContent(),
      'needs review'
    );
    await item.getByRole('button', { name: 'Review' }).click();
    assert.match(
      await item.locator('.jp-ThinkSkill-why').textContent(),
      /^needs review: new or changed since a person approved it/
    );
    const text = item.locator('.jp-ThinkSkill-text');
    assert.equal(await text.textContent(), PLANTED);
    await shot(page, 'skill-needs-review', area);
    await item.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.waitForFunction(
      () =>
        document
          .querySelector('.jp-ThinkSkills-counts')
          ?.textContent?.startsWith('2 skills,'),
      null,
      { timeout: TIMEOUT }
    );
    const plots = area.locator('.jp-ThinkSkill', { hasText: '/plots' });
    assert.equal(
      await plots.locator('.jp-ThinkSkill-note').textContent(),
      'Plot with the team colours.'
    );
    assert.equal(await area.locator('.jp-ThinkSkill.jp-mod-review').count(), 0);
    // The chat's card of the same approval settled with it.
    await page.waitForFunction(
      () => !document.querySelector('.jp-ThinkApproval[data-status="pending"]'),
      null,
      { timeout: TIMEOUT }
    );
    await shot(page, 'skill-reviewed', area);
  });
});
