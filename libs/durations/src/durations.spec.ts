import { parseDurationList } from './durations';

describe('parseDurationList', () => {
  it('reads each step with its unit', () => expect(parseDurationList('250ms, 1.5m,2h,1d')).toEqual([250, 90_000, 7_200_000, 86_400_000]));
  it.each(['', '5', '5x', '1s,,2s', '0s'])('refuses %p', (text) => expect(() => parseDurationList(text)).toThrow());
});
