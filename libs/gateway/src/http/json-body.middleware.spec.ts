import { ApiError } from '@campaign-ops/api-errors';
import { MAX_BODY_DEPTH, shapeRefusal } from './json-body.middleware';

/** `{"a": {"a": … 1}}`, `levels` objects deep. */
const nestedObjects = (levels: number): unknown => JSON.parse(`${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`);

describe('shapeRefusal', () => {
  const refusal = (body: unknown) => {
    const error = shapeRefusal(body);
    return error && { code: (error as ApiError).code, param: (error as ApiError).param, message: error.message };
  };

  it('accepts the bodies of the API, and what is not an object at all', () => {
    const launch = { channel: 'meta_ads', campaign: { name: 'n', budget: { amount_micros: 1, currency: 'USD' }, targeting: { countries: ['DE', 'FR'] } } };
    for (const body of [launch, [], [{ a: [1, { b: null }] }], 'text', 5, null, undefined]) expect(shapeRefusal(body)).toBeNull();
    expect(shapeRefusal(nestedObjects(MAX_BODY_DEPTH))).toBeNull();
  });

  it('refuses a body nested deeper than MAX_BODY_DEPTH, naming the path where it goes too deep', () => {
    expect(refusal(nestedObjects(MAX_BODY_DEPTH + 1))).toEqual({
      code: 'parameter_invalid',
      param: Array(MAX_BODY_DEPTH).fill('a').join('.'),
      message: `${Array(MAX_BODY_DEPTH).fill('a').join('.')} is nested deeper than ${MAX_BODY_DEPTH} levels; no field of this API is.`,
    });
    const arrays = JSON.parse(`{"events":${'['.repeat(40)}${']'.repeat(40)}}`);
    expect(refusal(arrays)?.param).toBe(['events', ...Array(MAX_BODY_DEPTH - 1).fill('0')].join('.'));
  });

  it('refuses a field named like an Object.prototype member or prototype, at the top or nested, naming its path', () => {
    expect(refusal(JSON.parse('{"url":"u","__proto__":null}'))).toEqual({
      code: 'parameter_unknown',
      param: '__proto__',
      message: '__proto__ is not a known parameter',
    });
    expect(refusal({ campaign: { budget: { amount_micros: 1, constructor: 1 } } })?.param).toBe('campaign.budget.constructor');
    expect(refusal({ items: [{ ok: 1 }, { prototype: 1 }] })?.param).toBe('items.1.prototype');
    // An array's indexes are not names: `length` is no field of it.
    expect(refusal({ items: ['a', 'b'] })).toBeNull();
  });
});
