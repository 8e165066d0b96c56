import type { Filter } from './read-store.port';
import { assertFieldName, matchNothing, storedField, toMongoFilter } from './mongo-filter';

const NOT_ARRAY = { $not: { $type: 'array' } };
const NOTHING = { _id: { $in: [] } };

describe('toMongoFilter', () => {
  describe('equality', () => {
    it.each([
      ['a string', 'pending'],
      ['an empty string', ''],
      ['an integer', 3],
      ['a float', 2.5],
      ['zero', 0],
      ['true', true],
      ['false', false],
    ])('on %s is $eq (type-strict in MongoDB) and never matches arrays', (_label, value) => {
      expect(toMongoFilter({ field: value })).toStrictEqual({ field: { $eq: value, ...NOT_ARRAY } });
    });

    it('on null is $eq null, which matches null and missing fields', () => {
      expect(toMongoFilter({ note: null })).toStrictEqual({ note: { $eq: null, ...NOT_ARRAY } });
    });

    it('on a numeric string stays a string', () => {
      expect(toMongoFilter({ n: '3' })).toStrictEqual({ n: { $eq: '3', ...NOT_ARRAY } });
    });
  });

  describe('ranges', () => {
    it.each(['$lt', '$lte', '$gt', '$gte'])('passes %s through with the array guard', (operator) => {
      expect(toMongoFilter({ n: { [operator]: 5 } })).toStrictEqual({ n: { [operator]: 5, ...NOT_ARRAY } });
      expect(toMongoFilter({ s: { [operator]: 'm' } })).toStrictEqual({ s: { [operator]: 'm', ...NOT_ARRAY } });
      expect(toMongoFilter({ b: { [operator]: false } })).toStrictEqual({ b: { [operator]: false, ...NOT_ARRAY } });
    });

    it('combines several operators on one field', () => {
      expect(toMongoFilter({ n: { $gte: 2, $lte: 10 } })).toStrictEqual({ n: { $gte: 2, $lte: 10, ...NOT_ARRAY } });
      expect(toMongoFilter({ status: { $gte: 'e', $lt: 'p' } })).toStrictEqual({ status: { $gte: 'e', $lt: 'p', ...NOT_ARRAY } });
    });

    it.each(['$lte', '$gte'])('%s null behaves like equality with null', (operator) => {
      expect(toMongoFilter({ note: { [operator]: null } })).toStrictEqual({ note: { $eq: null, ...NOT_ARRAY } });
      expect(toMongoFilter({ note: { $lte: null, $gte: null } })).toStrictEqual({ note: { $eq: null, ...NOT_ARRAY } });
    });

    it.each(['$lt', '$gt'])('%s null matches nothing, whatever the other conditions', (operator) => {
      expect(toMongoFilter({ note: { [operator]: null } })).toStrictEqual(NOTHING);
      expect(toMongoFilter({ status: 'pending', note: { $gte: 1, [operator]: null } })).toStrictEqual(NOTHING);
    });
  });

  describe('$in', () => {
    it('on strings', () => {
      expect(toMongoFilter({ status: { $in: ['done', 'failed'] } })).toStrictEqual({ status: { $in: ['done', 'failed'], ...NOT_ARRAY } });
    });

    it('with mixed types keeps each value as it is (MongoDB matches each by its type)', () => {
      expect(toMongoFilter({ n: { $in: [1, 10, '3', true] } })).toStrictEqual({ n: { $in: [1, 10, '3', true], ...NOT_ARRAY } });
    });

    it('with null keeps null, which matches null and missing fields', () => {
      expect(toMongoFilter({ note: { $in: [null, 'hi'] } })).toStrictEqual({ note: { $in: [null, 'hi'], ...NOT_ARRAY } });
    });

    it('empty matches nothing, whatever the other conditions', () => {
      expect(toMongoFilter({ status: { $in: [] } })).toStrictEqual(NOTHING);
      expect(toMongoFilter({ tag: 'x', status: { $in: [] } })).toStrictEqual(NOTHING);
    });

    it('combines with ranges on the same field', () => {
      expect(toMongoFilter({ n: { $in: [1, 5, 9], $gt: 2 } })).toStrictEqual({ n: { $in: [1, 5, 9], $gt: 2, ...NOT_ARRAY } });
    });

    it('copies the list, so that changing the caller’s array later changes nothing', () => {
      const values = ['a'];
      const filter = toMongoFilter({ status: { $in: values } });
      values.push('b');
      expect(filter).toStrictEqual({ status: { $in: ['a'], ...NOT_ARRAY } });
    });
  });

  describe('undefined and empty conditions', () => {
    it('an empty filter is an empty query', () => {
      expect(toMongoFilter({})).toStrictEqual({});
    });

    it('an undefined condition is no condition', () => {
      expect(toMongoFilter({ status: 'pending', note: undefined } as unknown as Filter)).toStrictEqual({ status: { $eq: 'pending', ...NOT_ARRAY } });
    });

    it('an undefined operand is no condition', () => {
      expect(toMongoFilter({ n: { $gte: 2, $lte: undefined } })).toStrictEqual({ n: { $gte: 2, ...NOT_ARRAY } });
      expect(toMongoFilter({ n: { $in: undefined } })).toStrictEqual({});
    });

    it('a condition object without operators is no condition (not equality with {})', () => {
      expect(toMongoFilter({ n: {} })).toStrictEqual({});
      expect(toMongoFilter({ id: {} })).toStrictEqual({});
    });

    it('an undefined condition is not validated, like an absent one', () => {
      expect(toMongoFilter({ 'a.b': undefined } as unknown as Filter)).toStrictEqual({});
    });
  });

  describe('id', () => {
    it('maps to _id, as a plain value for equality', () => {
      expect(toMongoFilter({ id: 'doc_0001' })).toStrictEqual({ _id: 'doc_0001' });
      expect(storedField('id')).toBe('_id');
      expect(storedField('status')).toBe('status');
    });

    it('ranges and $in on id need no array guard', () => {
      expect(toMongoFilter({ id: { $gt: 'doc_0004' } })).toStrictEqual({ _id: { $gt: 'doc_0004' } });
      expect(toMongoFilter({ id: { $gte: 'a', $lt: 'b' } })).toStrictEqual({ _id: { $gte: 'a', $lt: 'b' } });
      expect(toMongoFilter({ id: { $in: ['a', 'b'] } })).toStrictEqual({ _id: { $in: ['a', 'b'] } });
    });

    it('ids are strings: other kinds and null match nothing', () => {
      for (const value of [1, true, null]) {
        expect(toMongoFilter({ id: value })).toStrictEqual(NOTHING);
        expect(toMongoFilter({ id: { $gte: value } })).toStrictEqual(NOTHING);
        expect(toMongoFilter({ id: { $lt: value } })).toStrictEqual(NOTHING);
      }
    });

    it('$in on id keeps the strings only, and matches nothing without any', () => {
      expect(toMongoFilter({ id: { $in: ['a', 1, null, 'b'] } })).toStrictEqual({ _id: { $in: ['a', 'b'] } });
      expect(toMongoFilter({ id: { $in: [1, null] } })).toStrictEqual(NOTHING);
      expect(toMongoFilter({ id: { $in: [] } })).toStrictEqual(NOTHING);
    });
  });

  it('combines conditions on several fields (an implicit AND)', () => {
    expect(toMongoFilter({ status: 'pending', flag: true, n: { $lte: 2 }, id: { $in: ['a'] } })).toStrictEqual({
      status: { $eq: 'pending', ...NOT_ARRAY },
      flag: { $eq: true, ...NOT_ARRAY },
      n: { $lte: 2, ...NOT_ARRAY },
      _id: { $in: ['a'] },
    });
  });

  it('returns a fresh query every time (callers may extend it)', () => {
    const a = toMongoFilter({ status: { $in: [] } });
    a._id.$in.push('x');
    expect(toMongoFilter({ status: { $in: [] } })).toStrictEqual(NOTHING);
    expect(matchNothing()).toStrictEqual(NOTHING);
  });

  describe('rejects', () => {
    it.each(['a.b', '$where', 'status; x', '', '1st', 'ä'])('the field name %p', (field) => {
      expect(() => toMongoFilter({ [field]: 'x' })).toThrow(/invalid field name/);
    });

    it.each(['_id', '_rev'])('the reserved field %p', (field) => {
      expect(() => toMongoFilter({ [field]: 'x' })).toThrow(/reserved field name/);
      expect(() => assertFieldName(field)).toThrow(/reserved field name/);
    });

    it('an invalid field even beside a condition that matches nothing', () => {
      expect(() => toMongoFilter({ status: { $in: [] }, 'a.b': 1 })).toThrow(/invalid field name/);
      expect(() => toMongoFilter({ note: { $lt: null, $ne: 1 } as never })).toThrow(/unsupported filter operator/);
    });

    it.each(['$ne', '$nin', '$exists', '$regex', '$eq', '$not', 'constructor', 'toString', '__proto__'])('the operator %p', (operator) => {
      const condition = JSON.parse(`{${JSON.stringify(operator)}: "x"}`) as never;
      expect(() => toMongoFilter({ status: condition })).toThrow(/unsupported filter operator/);
    });

    it('a condition that is neither a scalar nor an operator object', () => {
      expect(() => toMongoFilter({ status: ['a'] as never })).toThrow(/invalid filter on status/);
      expect(() => toMongoFilter({ status: (() => 1) as never })).toThrow(/invalid filter on status/);
      expect(() => toMongoFilter({ id: ['a'] as never })).toThrow(/invalid filter on id/);
    });

    it('$in without an array, or with non-scalars', () => {
      expect(() => toMongoFilter({ status: { $in: 'a' as never } })).toThrow(/needs an array/);
      expect(() => toMongoFilter({ status: { $in: [{ a: 1 }] as never } })).toThrow(/accepts scalars only/);
      expect(() => toMongoFilter({ status: { $in: [['a']] as never } })).toThrow(/accepts scalars only/);
    });

    it('a range with a non-scalar operand', () => {
      expect(() => toMongoFilter({ n: { $gte: [1] as never } })).toThrow(/needs a scalar/);
      expect(() => toMongoFilter({ n: { $lt: { a: 1 } as never } })).toThrow(/needs a scalar/);
    });

    it.each([NaN, Infinity, -Infinity])('the number %p, which JSON documents cannot hold', (value) => {
      expect(() => toMongoFilter({ n: value })).toThrow(/JSON has no such number/);
      expect(() => toMongoFilter({ n: { $gte: value } })).toThrow(/JSON has no such number/);
      expect(() => toMongoFilter({ n: { $in: [1, value] } })).toThrow(/JSON has no such number/);
      expect(() => toMongoFilter({ id: value })).toThrow(/JSON has no such number/);
    });

    it('a filter that is not an object', () => {
      expect(() => toMongoFilter(null as never)).toThrow(/a filter must be an object/);
      expect(() => toMongoFilter([] as never)).toThrow(/a filter must be an object/);
    });
  });
});
