import { deterministicUlid, newId, publicEventId, randomBase62, storedEventId, ulid, ulidToUuid, uuidToUlid } from './ids';

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
