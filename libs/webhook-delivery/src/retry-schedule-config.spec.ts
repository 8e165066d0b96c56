import { DEFAULT_WEBHOOK_RETRY_SCHEDULE } from '@campaign-ops/service-runtime';
import { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule } from '@campaign-ops/webhook-domain';

// service-runtime repeats the retry schedule's default so it needs no domain lib; the two stay one.
describe('WEBHOOK_RETRY_SCHEDULE default', () => {
  it('is webhook-domain’s schedule (docs/api.md#webhooks-and-signatures)', () => expect(DEFAULT_WEBHOOK_RETRY_SCHEDULE).toBe(DEFAULT_RETRY_SCHEDULE));
  it('parses to the same delays', () => expect(parseRetrySchedule(DEFAULT_WEBHOOK_RETRY_SCHEDULE)).toEqual(parseRetrySchedule(DEFAULT_RETRY_SCHEDULE)));
});
