import { ArgumentMetadata } from '@nestjs/common';
import {
  CreateAccountDto,
  CreateCampaignDto,
  CreateWebhookDto,
  ListDispatchesQueryDto,
  ListEventsQueryDto,
  NoBody,
  UpdateWebhookDto,
} from '@campaign-ops/api-contract';
import { ApiError } from '@campaign-ops/api-errors';
import { sandboxCampaign } from '../../../../test/support/partner-client';
import { ApiValidationPipe } from './api-validation.pipe';

const pipe = new ApiValidationPipe();
const body = (metatype: Function): ArgumentMetadata => ({ type: 'body', metatype: metatype as ArgumentMetadata['metatype'] });
const query = (metatype: Function): ArgumentMetadata => ({ type: 'query', metatype: metatype as ArgumentMetadata['metatype'] });

/** The API error the pipe answers, or null when the value passes. */
async function errorOf(value: unknown, metadata: ArgumentMetadata): Promise<{ code: string; param?: string; message: string } | null> {
  try {
    await pipe.transform(value, metadata);
    return null;
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return { code: error.code, param: error.param, message: error.message };
  }
}

const campaign = () => sandboxCampaign();
type Body = ReturnType<typeof campaign> & Record<string, unknown>;
const check = (edit: (b: Body) => void) => {
  const b = campaign() as Body;
  edit(b);
  return errorOf(b, body(CreateCampaignDto));
};

describe('POST /v1/campaigns body (CreateCampaignDto through the ApiValidationPipe)', () => {
  it('accepts the body of docs/api.md, and hands it on as it came', async () => {
    expect(await errorOf(campaign(), body(CreateCampaignDto))).toBeNull();
    expect(await pipe.transform(campaign(), body(CreateCampaignDto))).toEqual(campaign());
  });

  it.each<[string, (b: Body) => void, string, string]>([
    ['a missing channel', (b) => delete (b as Partial<Body>).channel, 'parameter_missing', 'channel'],
    ['an unknown channel', (b) => (b.channel = 'myspace_ads'), 'parameter_invalid', 'channel'],
    ['an unknown top-level field', (b) => (b.extra = 1), 'parameter_unknown', 'extra'],
    ['an unknown nested field', (b) => ((b.campaign.budget as Record<string, unknown>).cents = 1), 'parameter_unknown', 'campaign.budget.cents'],
    ['a missing budget', (b) => delete (b.campaign as Partial<Body['campaign']>).budget, 'parameter_missing', 'campaign.budget'],
    ['a null budget', (b) => ((b.campaign as Record<string, unknown>).budget = null), 'parameter_invalid', 'campaign.budget'],
    ['a budget that is an array', (b) => ((b.campaign as Record<string, unknown>).budget = [b.campaign.budget]), 'parameter_invalid', 'campaign.budget'],
    ['a campaign that is a string', (b) => ((b as Record<string, unknown>).campaign = 'Spring'), 'parameter_invalid', 'campaign'],
    ['an empty name', (b) => (b.campaign.name = ''), 'parameter_invalid', 'campaign.name'],
    ['a 256-character name', (b) => (b.campaign.name = 'x'.repeat(256)), 'parameter_invalid', 'campaign.name'],
    ['an unknown objective', (b) => (b.campaign.objective = 'sales'), 'parameter_invalid', 'campaign.objective'],
    ['a zero budget', (b) => (b.campaign.budget.amount_micros = 0), 'parameter_invalid', 'campaign.budget.amount_micros'],
    ['a fractional budget', (b) => (b.campaign.budget.amount_micros = 1.5), 'parameter_invalid', 'campaign.budget.amount_micros'],
    ['an unsafe integer budget', (b) => (b.campaign.budget.amount_micros = 2 ** 53), 'parameter_invalid', 'campaign.budget.amount_micros'],
    ['a string budget', (b) => ((b.campaign.budget as Record<string, unknown>).amount_micros = '5'), 'parameter_invalid', 'campaign.budget.amount_micros'],
    ['a lowercase currency', (b) => (b.campaign.budget.currency = 'usd'), 'parameter_invalid', 'campaign.budget.currency'],
    ['a made-up currency', (b) => (b.campaign.budget.currency = 'ABC'), 'parameter_invalid', 'campaign.budget.currency'],
    ['an unknown budget type', (b) => (b.campaign.budget.type = 'weekly'), 'parameter_invalid', 'campaign.budget.type'],
    ['a local start time', (b) => (b.campaign.schedule.start_at = '2026-12-01T09:00:00+01:00'), 'parameter_invalid', 'campaign.schedule.start_at'],
    ['an impossible date', (b) => (b.campaign.schedule.start_at = '2026-02-30T09:00:00Z'), 'parameter_invalid', 'campaign.schedule.start_at'],
    ['an unknown time zone', (b) => (b.campaign.schedule.timezone = 'Mars/Olympus'), 'parameter_invalid', 'campaign.schedule.timezone'],
    [
      'an end before the start',
      (b) => ((b.campaign.schedule as Record<string, unknown>).end_at = '2026-11-30T09:00:00Z'),
      'parameter_invalid',
      'campaign.schedule.end_at',
    ],
    ['a lifetime budget with no end', (b) => (b.campaign.budget.type = 'lifetime'), 'parameter_missing', 'campaign.schedule.end_at'],
  ])('refuses %s', async (_, edit, code, param) => expect(await check(edit)).toMatchObject({ code, param }));

  it('accepts a lifetime budget with an end, and milliseconds', async () =>
    expect(
      await check((b) => {
        b.campaign.budget.type = 'lifetime';
        b.campaign.schedule.start_at = '2026-12-01T09:00:00.000Z';
        (b.campaign.schedule as Record<string, unknown>).end_at = '2026-12-31T09:00:00Z';
      }),
    ).toBeNull());

  it('says which currency rule was broken, in words', async () =>
    expect((await check((b) => (b.campaign.budget.currency = 'usd')))?.message).toBe(
      'campaign.budget.currency must be a three-letter uppercase ISO 4217 code',
    ));

  it('answers what a value is before what it holds, whatever the order of the decorators', async () =>
    expect((await check((b) => ((b.campaign.budget as Record<string, unknown>).amount_micros = '5')))?.message).toBe(
      'campaign.budget.amount_micros must be an integer, not a string',
    ));

  it('answers the rules of a field in the order they are written', async () =>
    expect((await check((b) => (b.campaign.schedule.timezone = 'Mars/'.repeat(20))))?.message).toBe(
      'campaign.schedule.timezone must be shorter than or equal to 64 characters',
    ));

  it('answers the first error, deterministically: unknown fields, then the fields in order, then rules across fields', async () => {
    expect(
      await check((b) => {
        b.extra = 1;
        b.channel = 'x';
      }),
    ).toMatchObject({ code: 'parameter_unknown', param: 'extra' });
    expect(
      await check((b) => {
        b.channel = 'x';
        b.campaign.name = '';
      }),
    ).toMatchObject({ param: 'channel' });
    expect(
      await check((b) => {
        b.campaign.budget.type = 'lifetime';
        b.campaign.schedule.timezone = 'Mars/Olympus';
      }),
    ).toMatchObject({ code: 'parameter_invalid', param: 'campaign.schedule.timezone' });
    expect(
      await check((b) => {
        b.campaign.schedule.start_at = 'soon';
        (b.campaign.schedule as Record<string, unknown>).end_at = '2020-01-01T00:00:00Z';
      }),
    ).toMatchObject({ param: 'campaign.schedule.start_at' });
  });

  it.each([
    ['an array', []],
    ['a string', 'channel=meta_ads'],
    ['null', null],
    ['a number', 42],
  ])('refuses a body that is %s, naming no field', async (_, value) =>
    expect(await errorOf(value, body(CreateCampaignDto))).toEqual({
      code: 'parameter_invalid',
      param: undefined,
      message: expect.stringContaining('must be a JSON object'),
    }),
  );

  it('takes no body as an empty one: the first required field is missing', async () =>
    expect(await errorOf(undefined, body(CreateCampaignDto))).toMatchObject({ code: 'parameter_missing', param: 'channel' }));
});

describe('webhook bodies', () => {
  it('refuses an unknown event with event_unknown, naming the item', async () =>
    expect(await errorOf({ url: 'https://x.example', events: ['dispatch.completed', 'dispatch.done'] }, body(CreateWebhookDto))).toMatchObject({
      code: 'event_unknown',
      param: 'events.1',
      message: expect.stringContaining('dispatch.done'),
    }));
  it('names the type it got with its article: an object, an undefined, a number', async () => {
    expect(await errorOf({ url: { a: 1 }, events: ['dispatch.completed'] }, body(CreateWebhookDto))).toMatchObject({
      message: expect.stringMatching(/not an object$/),
    });
    expect(await errorOf({ url: 'https://x.example', events: [5] }, body(CreateWebhookDto))).toMatchObject({ message: expect.stringMatching(/not a number$/) });
  });

  it('refuses an item that is not a string before looking it up', async () =>
    expect(await errorOf({ url: 'https://x.example', events: [5] }, body(CreateWebhookDto))).toMatchObject({
      code: 'parameter_invalid',
      param: 'events.0',
      message: 'events.0 must be a string, not a number',
    }));
  it('refuses an empty event list', async () =>
    expect(await errorOf({ url: 'https://x.example', events: [] }, body(CreateWebhookDto))).toMatchObject({ code: 'parameter_invalid', param: 'events' }));
  it('lets a PATCH leave fields out, but not send them null', async () => {
    expect(await errorOf({}, body(UpdateWebhookDto))).toBeNull();
    expect(await errorOf({ enabled: false }, body(UpdateWebhookDto))).toBeNull();
    expect(await errorOf({ url: null }, body(UpdateWebhookDto))).toMatchObject({
      code: 'parameter_invalid',
      param: 'url',
      message: 'url must be a string, not null',
    });
    expect(await errorOf({ enabled: 'yes' }, body(UpdateWebhookDto))).toMatchObject({ code: 'parameter_invalid', param: 'enabled' });
  });
});

describe('other bodies', () => {
  it('an admin account: name required, credits optional and bounded', async () => {
    expect(await errorOf({ name: 'Acme' }, body(CreateAccountDto))).toBeNull();
    expect(await errorOf({}, body(CreateAccountDto))).toMatchObject({ code: 'parameter_missing', param: 'name' });
    expect(await errorOf({ name: 'Acme', credits: -1 }, body(CreateAccountDto))).toMatchObject({ code: 'parameter_invalid', param: 'credits' });
  });
  it('a route that takes no body refuses any field, and takes none or {}', async () => {
    expect(await errorOf({ force: true }, body(NoBody))).toMatchObject({ code: 'parameter_unknown', param: 'force' });
    expect(await errorOf({}, body(NoBody))).toBeNull();
    expect(await errorOf(undefined, body(NoBody))).toBeNull();
  });
});

describe('list queries', () => {
  it.each<[Record<string, unknown>, string | null, string?]>([
    [{}, null, undefined],
    [{ limit: '100', starting_after: 'dsp_01ABC', status: 'failed', channel: 'meta_ads' }, null, undefined],
    [{ limit: '0' }, 'parameter_invalid', 'limit'],
    [{ limit: '101' }, 'parameter_invalid', 'limit'],
    [{ limit: '1.5' }, 'parameter_invalid', 'limit'],
    [{ limit: ['1', '2'] }, 'parameter_invalid', 'limit'],
    [{ starting_after: '../x' }, 'parameter_invalid', 'starting_after'],
    [{ status: 'paused' }, 'parameter_invalid', 'status'],
    [{ colour: 'red' }, 'parameter_unknown', 'colour'],
  ])('dispatches %j', async (value, code, param) => {
    const error = await errorOf(value, query(ListDispatchesQueryDto));
    if (code === null) expect(error).toBeNull();
    else expect(error).toMatchObject({ code, param });
  });
  it('events: a known type and a real UTC instant', async () => {
    expect(await errorOf({ type: 'dispatch.failed', created_after: '2026-12-01T09:00:00Z' }, query(ListEventsQueryDto))).toBeNull();
    expect(await errorOf({ type: 'dispatch.done' }, query(ListEventsQueryDto))).toMatchObject({ code: 'parameter_invalid', param: 'type' });
    expect(await errorOf({ created_after: '2026-02-30T00:00:00Z' }, query(ListEventsQueryDto))).toMatchObject({
      code: 'parameter_invalid',
      param: 'created_after',
    });
  });
});
