/** mulberry32: a small seeded generator, so that every run of a property spec tries the same cases (a failure names its seed and case). */
export function seededRandom(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return { int, chance: (p: number) => next() < p, pick: <T>(items: readonly T[]): T => items[int(items.length)] };
}

export type SeededRandom = ReturnType<typeof seededRandom>;
