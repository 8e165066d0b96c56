import { ProviderError } from '@campaign-ops/channels';
import { ISO_4217_EXPONENTS, currencyExponent, toMajorUnitNumber, toMajorUnitString, toMicros, toMinorUnits } from './budget-units';

const refusal = (run: () => unknown): ProviderError => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ProviderError);
    return error as ProviderError;
  }
  throw new Error('expected a refusal');
};

describe('ISO 4217 exponents', () => {
  it.each([
    ['USD', 2],
    ['EUR', 2],
    ['GBP', 2],
    ['BRL', 2],
    ['INR', 2],
    ['CNY', 2],
    ['MXN', 2],
    ['HUF', 2],
    ['IDR', 2],
    ['TWD', 2],
    ['JPY', 0],
    ['KRW', 0],
    ['CLP', 0],
    ['VND', 0],
    ['ISK', 0],
    ['PYG', 0],
    ['UGX', 0],
    ['KWD', 3],
    ['BHD', 3],
    ['JOD', 3],
    ['OMR', 3],
    ['TND', 3],
    ['IQD', 3],
    ['LYD', 3],
    ['CLF', 4],
  ])('%s has %i decimals', (currency, exponent) => expect(currencyExponent(currency)).toBe(exponent));

  it('refuses a code it does not know, as validation', () => {
    expect(refusal(() => currencyExponent('XYZ'))).toMatchObject({ kind: 'validation', providerCode: 'currency_unsupported' });
  });

  it('covers every currency the sandbox bills in', () => {
    for (const code of [
      'USD',
      'EUR',
      'GBP',
      'CHF',
      'CAD',
      'AUD',
      'NZD',
      'JPY',
      'KRW',
      'CNY',
      'HKD',
      'SGD',
      'INR',
      'BRL',
      'MXN',
      'SEK',
      'NOK',
      'DKK',
      'PLN',
      'CZK',
      'ZAR',
      'AED',
      'SAR',
      'ILS',
      'TRY',
      'KWD',
      'BHD',
      'CLP',
    ])
      expect(ISO_4217_EXPONENTS[code]).toBeDefined();
  });
});

describe('conversions from amount_micros', () => {
  it('passes micros through, and refuses what is no positive whole number', () => {
    expect(toMicros(12_340_000)).toBe(12_340_000);
    for (const bad of [0, -1, 1.5, Number.NaN, 2 ** 60])
      expect(refusal(() => toMicros(bad))).toMatchObject({ kind: 'validation', providerCode: 'budget_invalid' });
  });

  it.each([
    [12_340_000, 'USD', 1234],
    [10_000, 'USD', 1],
    [1_500_000_000, 'JPY', 1500],
    [1_000_000, 'JPY', 1],
    [1_250_000, 'KWD', 1250],
    [1_000, 'KWD', 1],
    [9_007_199_254_740_000, 'USD', 900_719_925_474],
  ])('%i micros of %s are %i minor units', (micros, currency, minor) => expect(toMinorUnits(micros, currency)).toBe(minor));

  it.each([
    [12_345_000, 'USD'],
    [1, 'USD'],
    [1_500_500_000, 'JPY'],
    [1_250_500, 'KWD'],
  ])('refuses %i micros of %s: no whole number of minor units', (micros, currency) => {
    const error = refusal(() => toMinorUnits(micros, currency));
    expect(error).toMatchObject({ kind: 'validation', providerCode: 'budget_not_whole_minor_units' });
    expect(error.message).toContain(currency);
  });

  it("takes a network's own exponent over ISO's (Meta writes BHD with two decimals)", () => {
    expect(toMinorUnits(1_250_000, 'BHD', 2)).toBe(125);
    expect(refusal(() => toMinorUnits(1_255_000, 'BHD', 2))).toMatchObject({ providerCode: 'budget_not_whole_minor_units' });
  });

  it.each([
    [12_340_000, 'USD', '12.34'],
    [10_000, 'USD', '0.01'],
    [50_000_000, 'USD', '50.00'],
    [1_500_000_000, 'JPY', '1500'],
    [1_250_000, 'KWD', '1.250'],
    [1_000, 'KWD', '0.001'],
    [123_456_789_120_000, 'USD', '123456789.12'],
  ])('writes %i micros of %s as "%s"', (micros, currency, text) => expect(toMajorUnitString(micros, currency)).toBe(text));

  it('gives numbers that print as the same decimals, with no float drift', () => {
    // 0.1 + 0.2 style drift would show here: 70_000 + ... computed as floats gives 0.07000000000000001.
    expect(JSON.stringify({ budget: toMajorUnitNumber(70_000, 'USD') })).toBe('{"budget":0.07}');
    expect(JSON.stringify({ budget: toMajorUnitNumber(20_010_000, 'USD') })).toBe('{"budget":20.01}');
    expect(toMajorUnitNumber(1_500_000_000, 'JPY')).toBe(1500);
    expect(toMajorUnitNumber(1_250_000, 'KWD')).toBe(1.25);
    for (let cents = 1; cents <= 5000; cents += 7) expect(String(toMajorUnitNumber(cents * 10_000, 'USD'))).toBe(String(Number((cents / 100).toFixed(2))));
  });

  it('refuses a major-unit amount finer than the minor unit too', () => {
    expect(refusal(() => toMajorUnitString(12_345_000, 'USD'))).toMatchObject({ providerCode: 'budget_not_whole_minor_units' });
  });
});
