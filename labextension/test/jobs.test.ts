// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';

import { IReminderFrame, reminderText, takeFrame } from '../src/reminders';

const job: IReminderFrame = {
  type: 'job',
  key: 'sch_9:1700000000',
  session_id: 's1',
  session_title: 'Training',
  name: 'train',
  state: 'done',
  message:
    "Background job 'train' ended (done, exit code 0) after 181 s and 720 lines of output.",
  fired_at: 1700000005
};

describe('job notifications', () => {
  it('show a job end once, naming its session', () => {
    const first = takeFrame({ since: 0, seen: [] }, job as never);
    expect(first.show?.key).toBe(job.key);
    expect(takeFrame(first.memory, job as never).show).toBeNull();
    expect(reminderText(job)).toBe(`Think (Training): ${job.message}`);
  });
});
