import { randomBytes } from 'node:crypto';
import {
  deterministicUlid,
  newId,
  publicEventId,
  randomBase62,
  storedEventId,
  ulid,
  ulidToUuid,
  ulidToUuidByBigInt,
  uuidToUlid,
  uuidToUlidByBigInt,
} from './ids';

describe('ids', () => {
  it('are prefixed and sort in creation order', () => {
    const ids = Array.from({ length: 1000 }, () => newId('dsp'));
    expect(ids.every((id) => /^dsp_[0-9A-HJKMNP-TV-Z]{26}$/.test(id))).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('map a ULID to a UUID and back without loss', () => {
    const id = ulid();
    const uuid = ulidToUuid(id);
    expect(uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(uuidToUlid(uuid)).toBe(id);
    expect(storedEventId(publicEventId(uuid))).toBe(uuid);
  });

  it('convert every canonical id exactly as the BigInt conversion does, both ways, in either case', () => {
    const uuids = [
      '00000000-0000-0000-0000-000000000000',
      'ffffffff-ffff-ffff-ffff-ffffffffffff',
      '80000000-0000-0000-0000-000000000001',
      ...Array.from({ length: 2000 }, () => {
        const hex = randomBytes(16).toString('hex');
        return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
      }),
    ];
    for (const uuid of uuids) {
      const id = uuidToUlid(uuid);
      expect(id).toBe(uuidToUlidByBigInt(uuid));
      expect(uuidToUlid(uuid.toUpperCase())).toBe(id);
      expect(ulidToUuid(id)).toBe(ulidToUuidByBigInt(id));
      expect(ulidToUuid(id)).toBe(uuid);
      expect(ulidToUuid(id.toLowerCase())).toBe(uuid);
    }
    expect(uuidToUlid('ffffffff-ffff-ffff-ffff-ffffffffffff')).toBe('7ZZZZZZZZZZZZZZZZZZZZZZZZZ');
  });

  it('convert what is not a canonical id as they always did: shorter ids padded, a character outside the alphabet refused', () => {
    expect(ulidToUuid('7ZZ')).toBe(ulidToUuidByBigInt('7ZZ'));
    expect(ulidToUuid('8ZZZZZZZZZZZZZZZZZZZZZZZZZ')).toBe(ulidToUuidByBigInt('8ZZZZZZZZZZZZZZZZZZZZZZZZZ'));
    expect(() => ulidToUuid('01HF7YAT00SABR24PA3EYWNYPU')).toThrow('not a ULID');
    expect(uuidToUlid('ff')).toBe(uuidToUlidByBigInt('ff'));
  });

  it('derive the same id from the same seed and time, another from another seed, and the ids stored before stay as they are', () => {
    // Delivery ids derive from (event, endpoint): an id computed otherwise after an upgrade would deliver an event twice.
    expect(deterministicUlid(1700000000000, 'a')).toBe('01HF7YAT00SABR24PA3EYWNYP2');
    expect(deterministicUlid(1795953903110, 'evt_01:whk_02')).toBe('01M8KK3HG68C187GASTZVM6V87');
    expect(deterministicUlid(0, '')).toBe('0000000000WERC8GMRZGE196QV');
    expect(deterministicUlid(1700000000000, 'a')).toBe(deterministicUlid(1700000000000, 'a'));
    expect(deterministicUlid(1700000000000, 'a')).not.toBe(deterministicUlid(1700000000000, 'b'));
  });

  it('draw a fresh random part at each new millisecond, also across refills of the random pool', () => {
    const parts = Array.from({ length: 1000 }, (_, i) => ulid(2_000_000_000_000 + i).slice(10));
    expect(new Set(parts).size).toBe(parts.length);
    expect(parts.every((part) => /^[0-9A-HJKMNP-TV-Z]{16}$/.test(part))).toBe(true);
  });

  it('make base62 secrets of the asked length', () => {
    const s = randomBase62(40);
    expect(s).toMatch(/^[0-9A-Za-z]{40}$/);
    expect(randomBase62(40)).not.toBe(s);
  });
});
