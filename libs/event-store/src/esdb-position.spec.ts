import { comparePositions, decodePosition, encodePosition, EsdbPosition, isUnknownPosition } from './esdb-position';

const U64_MAX = (1n << 64n) - 1n;

describe('EventStoreDB position codec', () => {
  const edgeValues = [0n, 1n, 2n, 1_000n, (1n << 32n) - 1n, 1n << 32n, (1n << 63n) - 1n, 1n << 63n, U64_MAX - 1n, U64_MAX];

  it('round-trips every pair of edge values', () => {
    for (const commit of edgeValues) {
      for (const prepare of edgeValues) {
        const encoded = encodePosition({ commit, prepare });
        expect(encoded).toMatch(/^(0|[1-9][0-9]*)$/);
        expect(decodePosition(encoded)).toEqual({ commit, prepare });
      }
    }
  });

  it('round-trips realistic positions', () => {
    for (const position of [
      { commit: 0n, prepare: 0n },
      { commit: 1234n, prepare: 1234n },
      { commit: 5_000_000_000n, prepare: 4_999_999_800n },
      { commit: 987_654_321_012n, prepare: 987_654_321_012n },
    ]) {
      expect(decodePosition(encodePosition(position))).toEqual(position);
    }
  });

  it('orders as EventStoreDB does: by commit, then by prepare', () => {
    const inOrder: EsdbPosition[] = [
      { commit: 0n, prepare: 0n },
      { commit: 0n, prepare: 1n },
      { commit: 0n, prepare: U64_MAX },
      { commit: 1n, prepare: 0n },
      { commit: 1n, prepare: 2n },
      { commit: 2n, prepare: 1n }, // a later commit wins even with an earlier prepare
      { commit: 1n << 40n, prepare: 0n },
      { commit: U64_MAX, prepare: 0n },
      { commit: U64_MAX, prepare: U64_MAX },
    ];
    const encoded = inOrder.map(encodePosition);
    for (let i = 1; i < encoded.length; i++) {
      // As the contract suite and the consumers compare them: as integers.
      expect(BigInt(encoded[i])).toBeGreaterThan(BigInt(encoded[i - 1]));
      expect(comparePositions(encoded[i], encoded[i - 1])).toBe(1);
      expect(comparePositions(encoded[i - 1], encoded[i])).toBe(-1);
    }
    expect(comparePositions(encoded[3], encodePosition({ commit: 1n, prepare: 0n }))).toBe(0);
  });

  it('keeps the order of randomly drawn positions', () => {
    const random = () => BigInt(Math.floor(Math.random() * 2 ** 40));
    const positions = Array.from({ length: 500 }, () => ({ commit: random(), prepare: random() }));
    const byPair = [...positions].sort((a, b) =>
      a.commit !== b.commit ? (a.commit < b.commit ? -1 : 1) : a.prepare < b.prepare ? -1 : a.prepare > b.prepare ? 1 : 0,
    );
    const byEncoding = [...positions].sort((a, b) => comparePositions(encodePosition(a), encodePosition(b)));
    expect(byEncoding).toEqual(byPair);
  });

  it('encodes the very start as 0 and packs commit above prepare', () => {
    expect(encodePosition({ commit: 0n, prepare: 0n })).toBe('0');
    expect(encodePosition({ commit: 0n, prepare: 42n })).toBe('42');
    expect(encodePosition({ commit: 1n, prepare: 0n })).toBe(String(1n << 64n));
    expect(encodePosition({ commit: U64_MAX, prepare: U64_MAX })).toBe(String((1n << 128n) - 1n));
  });

  it('rejects components outside unsigned 64 bits', () => {
    expect(() => encodePosition({ commit: -1n, prepare: 0n })).toThrow(RangeError);
    expect(() => encodePosition({ commit: 0n, prepare: -1n })).toThrow(RangeError);
    expect(() => encodePosition({ commit: 1n << 64n, prepare: 0n })).toThrow(RangeError);
    expect(() => encodePosition({ commit: 0n, prepare: 1n << 64n })).toThrow(RangeError);
    expect(() => encodePosition({ commit: 1 as unknown as bigint, prepare: 0n })).toThrow(RangeError);
  });

  it.each(['', ' 1', '1 ', '-1', '+1', '01', '00', '1.5', '1e3', 'abc', '0x10', String(1n << 128n)])('rejects %p as a position', (malformed) => {
    expect(() => decodePosition(malformed)).toThrow(/position/);
  });

  it('recognises the unknown position EventStoreDB reports as all ones', () => {
    expect(isUnknownPosition(undefined)).toBe(true);
    expect(isUnknownPosition({ commit: U64_MAX, prepare: U64_MAX })).toBe(true);
    expect(isUnknownPosition({ commit: 10n, prepare: 10n })).toBe(false);
  });
});
