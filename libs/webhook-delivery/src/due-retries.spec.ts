import { DueRetries } from './due-retries';

describe('DueRetries', () => {
  const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('hands over each endpoint once its earliest retry is due, in the order they come due, each endpoint once per look', async () => {
    const handed: string[][] = [];
    const retries = new DueRetries((endpoints) => handed.push(endpoints));
    const now = Date.now();
    retries.add('whk_late', now + 400);
    retries.add('whk_soon', now + 40);
    retries.add('whk_soon', now + 40);
    retries.add('whk_mid', now + 220);
    expect(retries.size).toBe(4);
    await later(130);
    expect(handed).toEqual([['whk_soon']]);
    await later(180);
    expect(handed).toEqual([['whk_soon'], ['whk_mid']]);
    await later(200);
    expect(handed).toEqual([['whk_soon'], ['whk_mid'], ['whk_late']]);
    expect(retries.size).toBe(0);
    retries.stop();
  });

  it('hands over at once what is already due, and keeps the heap in order across many retries', async () => {
    const handed: string[] = [];
    const retries = new DueRetries((endpoints) => handed.push(...endpoints));
    const now = Date.now();
    const offsets = Array.from({ length: 200 }, (_, i) => (i * 37) % 200);
    offsets.forEach((offset) => retries.add(`whk_${String(offset).padStart(3, '0')}`, now - 1000 + offset));
    await later(5);
    expect(handed).toEqual([...handed].sort());
    expect(new Set(handed).size).toBe(200);
    retries.stop();
  });

  it('an earlier retry added after a later one re-arms the timer for the earlier', async () => {
    const handed: string[] = [];
    const retries = new DueRetries((endpoints) => handed.push(...endpoints));
    retries.add('whk_late', Date.now() + 10_000);
    retries.add('whk_soon', Date.now() + 20);
    await later(60);
    expect(handed).toEqual(['whk_soon']);
    retries.stop();
  });

  it('hands over nothing after stop', async () => {
    const handed: string[] = [];
    const retries = new DueRetries((endpoints) => handed.push(...endpoints));
    retries.add('whk_1', Date.now() + 20);
    retries.stop();
    await later(50);
    expect(handed).toEqual([]);
    expect(retries.size).toBe(0);
  });
});
