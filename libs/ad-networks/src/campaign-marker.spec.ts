import { carriesMarker, markedName } from './campaign-marker';

const DSP = 'dsp_01JD8XQ4T7W3X9M2N5P6R8S0VA';

describe('the marker of a dispatch on the campaigns it creates', () => {
  it('is a suffix of the name: the partner sees their name, then the dispatch id', () =>
    expect(markedName('Spring sale', DSP, 255)).toBe(`Spring sale · ${DSP}`));

  it("shortens the partner's part, never the marker, to fit the network's limit", () => {
    const name = markedName('A'.repeat(200), DSP, 100);
    expect(name).toHaveLength(100);
    expect(name.endsWith(` · ${DSP}`)).toBe(true);
    expect(carriesMarker(name, DSP)).toBe(true);
  });

  it('counts characters, not UTF-16 units, and never splits one', () => {
    const name = markedName('🚀'.repeat(80), DSP, 100);
    expect(Array.from(name)).toHaveLength(100);
    expect(name).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it('drops trailing spaces left by shortening', () => expect(markedName('Spring sale      x', DSP, 11 + 3 + DSP.length + 3)).toBe(`Spring sale · ${DSP}`));

  it('is found on the name it made, and not on a name that carries a longer id starting with this one, or the id elsewhere', () => {
    expect(carriesMarker(`Spring · ${DSP}`, DSP)).toBe(true);
    expect(carriesMarker(`Spring · ${DSP}X`, DSP)).toBe(false);
    expect(carriesMarker(`${DSP} Spring`, DSP)).toBe(false);
    expect(carriesMarker(undefined, DSP)).toBe(false);
    expect(carriesMarker(42, DSP)).toBe(false);
  });
});
