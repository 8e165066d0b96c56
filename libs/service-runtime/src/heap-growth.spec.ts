import { limitHeapGrowth } from './heap-growth';

describe('limitHeapGrowth', () => {
  it("sets V8's heap growing factor to the percent given, and leaves V8's own at 0", () => {
    // V8's flags are the whole process's: the spec only records what would be set.
    const set: string[] = [];
    limitHeapGrowth(30, (flags) => set.push(flags));
    limitHeapGrowth(0, (flags) => set.push(flags));
    expect(set).toEqual(['--heap-growing-percent=30']);
  });
});
