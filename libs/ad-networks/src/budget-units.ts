import { ProviderError } from '@campaign-ops/channels';

/**
 * ISO 4217 minor-unit exponents: 2 unless listed under 0, 3 or 4. Covers every currency the big
 * networks bill in (and the rest of the active list); a network with its own idea of a currency's
 * precision (Meta's "offset") keeps that table in its own file and passes the exponent in.
 */
const ZERO_DECIMALS = ['BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'UYI', 'VND', 'VUV', 'XAF', 'XOF', 'XPF'];
const THREE_DECIMALS = ['BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND'];
const FOUR_DECIMALS = ['CLF', 'UYW'];
const TWO_DECIMALS = [
  'AED',
  'AFN',
  'ALL',
  'AMD',
  'ANG',
  'AOA',
  'ARS',
  'AUD',
  'AWG',
  'AZN',
  'BAM',
  'BBD',
  'BDT',
  'BGN',
  'BMD',
  'BND',
  'BOB',
  'BRL',
  'BSD',
  'BTN',
  'BWP',
  'BYN',
  'BZD',
  'CAD',
  'CDF',
  'CHF',
  'CNY',
  'COP',
  'CRC',
  'CUP',
  'CVE',
  'CZK',
  'DKK',
  'DOP',
  'DZD',
  'EGP',
  'ERN',
  'ETB',
  'EUR',
  'FJD',
  'FKP',
  'GBP',
  'GEL',
  'GHS',
  'GIP',
  'GMD',
  'GTQ',
  'GYD',
  'HKD',
  'HNL',
  'HTG',
  'HUF',
  'IDR',
  'ILS',
  'INR',
  'IRR',
  'JMD',
  'KES',
  'KGS',
  'KHR',
  'KPW',
  'KYD',
  'KZT',
  'LAK',
  'LBP',
  'LKR',
  'LRD',
  'LSL',
  'MAD',
  'MDL',
  'MGA',
  'MKD',
  'MMK',
  'MNT',
  'MOP',
  'MRU',
  'MUR',
  'MVR',
  'MWK',
  'MXN',
  'MYR',
  'MZN',
  'NAD',
  'NGN',
  'NIO',
  'NOK',
  'NPR',
  'NZD',
  'PAB',
  'PEN',
  'PGK',
  'PHP',
  'PKR',
  'PLN',
  'QAR',
  'RON',
  'RSD',
  'RUB',
  'SAR',
  'SBD',
  'SCR',
  'SDG',
  'SEK',
  'SGD',
  'SHP',
  'SLE',
  'SOS',
  'SRD',
  'SSP',
  'STN',
  'SVC',
  'SYP',
  'SZL',
  'THB',
  'TJS',
  'TMT',
  'TOP',
  'TRY',
  'TTD',
  'TWD',
  'TZS',
  'UAH',
  'USD',
  'UYU',
  'UZS',
  'VES',
  'VED',
  'WST',
  'XCD',
  'YER',
  'ZAR',
  'ZMW',
  'ZWG',
];

export const ISO_4217_EXPONENTS: Readonly<Record<string, number>> = Object.freeze({
  ...Object.fromEntries(TWO_DECIMALS.map((code) => [code, 2])),
  ...Object.fromEntries(ZERO_DECIMALS.map((code) => [code, 0])),
  ...Object.fromEntries(THREE_DECIMALS.map((code) => [code, 3])),
  ...Object.fromEntries(FOUR_DECIMALS.map((code) => [code, 4])),
});

const MICROS_EXPONENT = 6;

/** The ISO 4217 exponent of a currency; an unknown code is a validation error. */
export function currencyExponent(currency: string): number {
  const exponent = ISO_4217_EXPONENTS[currency];
  if (exponent === undefined)
    throw new ProviderError('validation', `currency ${currency} is not an ISO 4217 currency this service knows`, 'currency_unsupported');
  return exponent;
}

/** `amount_micros` as micros (networks that take micros): checked, unchanged. */
export function toMicros(amountMicros: number): number {
  wholeMicros(amountMicros);
  return amountMicros;
}

/**
 * `amount_micros` in minor units at `exponent` decimals (ISO's by default): 12_340_000 USD → 1234.
 * An amount finer than the minor unit is a validation error, never rounded.
 */
export function toMinorUnits(amountMicros: number, currency: string, exponent: number = currencyExponent(currency)): number {
  const micros = wholeMicros(amountMicros);
  const perMinor = 10n ** BigInt(MICROS_EXPONENT - exponent);
  if (micros % perMinor !== 0n)
    throw new ProviderError(
      'validation',
      `budget.amount_micros ${amountMicros} is not a whole number of ${currency} minor units (${exponent} decimals: a multiple of ${perMinor})`,
      'budget_not_whole_minor_units',
    );
  return Number(micros / perMinor);
}

/**
 * `amount_micros` as a decimal string of major units with exactly the currency's decimals:
 * 12_340_000 USD → "12.34", 1_500_000_000 JPY → "1500", 1_250_000 KWD → "1.250". Built from
 * integers, so no float ever rounds it; must be whole minor units, as for `toMinorUnits`.
 */
export function toMajorUnitString(amountMicros: number, currency: string, exponent: number = currencyExponent(currency)): string {
  const minor = BigInt(toMinorUnits(amountMicros, currency, exponent));
  if (exponent === 0) return minor.toString();
  const digits = minor.toString().padStart(exponent + 1, '0');
  return `${digits.slice(0, -exponent)}.${digits.slice(-exponent)}`;
}

/**
 * The same amount as a JSON number for networks whose field is a number: the double nearest the
 * decimal (which JSON writes back as that same decimal: "12.34" → 12.34), never the result of
 * float arithmetic.
 */
export function toMajorUnitNumber(amountMicros: number, currency: string, exponent: number = currencyExponent(currency)): number {
  return Number(toMajorUnitString(amountMicros, currency, exponent));
}

function wholeMicros(amountMicros: number): bigint {
  if (!Number.isSafeInteger(amountMicros) || amountMicros <= 0)
    throw new ProviderError('validation', `budget.amount_micros must be a positive whole number, not ${amountMicros}`, 'budget_invalid');
  return BigInt(amountMicros);
}
