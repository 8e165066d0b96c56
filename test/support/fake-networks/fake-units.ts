// The fakes' own idea of currency precision, kept apart from the adapters' table so a wrong
// exponent there shows up as the network's refusal here instead of agreeing with itself.
const EXPONENTS: Record<string, number> = {
  USD: 2,
  EUR: 2,
  GBP: 2,
  CAD: 2,
  AUD: 2,
  CHF: 2,
  BRL: 2,
  INR: 2,
  MXN: 2,
  SEK: 2,
  JPY: 0,
  KRW: 0,
  CLP: 0,
  VND: 0,
  ISK: 0,
  KWD: 3,
  BHD: 3,
  JOD: 3,
  OMR: 3,
  TND: 3,
};

export function isoExponent(currency: string): number {
  const exponent = EXPONENTS[currency];
  if (exponent === undefined) throw new Error(`the fake networks know no currency ${currency}`);
  return exponent;
}

/** Micros in one minor unit: USD 10_000, JPY 1_000_000, KWD 1_000. */
export function minorUnitMicros(currency: string): number {
  return 10 ** (6 - isoExponent(currency));
}

/** Decimal places in a major-unit amount string or number: "12.34" → 2. */
export function decimals(amount: string | number): number {
  const text = typeof amount === 'number' ? String(amount) : amount;
  const dot = text.indexOf('.');
  return dot === -1 ? 0 : text.length - dot - 1;
}
