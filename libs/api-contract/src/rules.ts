import { ValidateBy, ValidateIf, ValidationOptions } from 'class-validator';
import { TIME_ZONES } from './time-zones';

/**
 * The rules of docs/api.md that class-validator does not have, as decorators like its own, and the
 * `context` the gateway's exception factory reads (libs/gateway/src/http/api-validation.pipe.ts):
 * `code` when a rule answers another code than `parameter_invalid`, `at` when it names a field
 * below the one it decorates, `afterFields` when it compares fields and so speaks only after the
 * fields themselves are fine, `item` when it applies to each item and names the first bad one.
 */
export type ValidationCode = 'parameter_missing' | 'parameter_invalid' | 'event_unknown';
export interface RuleContext {
  code?: ValidationCode;
  at?: string;
  afterFields?: boolean;
  item?: (value: unknown) => boolean;
}

/** Options for a rule applied to each item of an array: its error names the first bad item (`events.0`). */
export const eachItem = (item: (value: unknown) => boolean, code?: ValidationCode): ValidationOptions => ({
  each: true,
  context: { item, ...(code && { code }) } satisfies RuleContext,
});

/** May be left out; when given it must be valid (unlike `@IsOptional()`, `null` is not "left out"). */
export const Omittable = () => ValidateIf((_object, value) => value !== undefined);

/** The ISO 4217 codes a budget may name (the OpenAPI document lists them as its enum). */
export const CURRENCY_CODES: readonly string[] = Intl.supportedValuesOf('currency');
const ISO_CURRENCIES = new Set(CURRENCY_CODES);

/**
 * RFC 3339 in UTC (OpenAPI's `date-time`, narrowed): seconds required, a fraction of 1 to 9
 * digits, `T` and `Z` upper case. The document gives this pattern beside `format: date-time`.
 */
export const UTC_TIMESTAMP_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?Z$';
const UTC_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?Z$/;

/** An RFC 3339 UTC timestamp ending in `Z`, and a real instant (no 31 February, no hour 25, no leap second). */
export function isUtcTimestamp(value: unknown): boolean {
  const m = typeof value === 'string' ? UTC_TIMESTAMP.exec(value) : null;
  if (!m) return false;
  const [y, mo, d, h, mi, sec] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number);
  // setUTCFullYear, not Date.UTC: Date.UTC takes years 0 to 99 as 1900 to 1999.
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  date.setUTCHours(h, mi, sec);
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d && h < 24 && mi < 60 && sec < 60;
}

const KNOWN_TIME_ZONES = new Set(TIME_ZONES);

/** An IANA time zone name, exactly as the database writes it (TIME_ZONES, the document's enum). */
export function isTimeZone(value: unknown): boolean {
  return typeof value === 'string' && KNOWN_TIME_ZONES.has(value);
}

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * A URL an account registers for its OAuth rounds to send a person back to (docs/api.md#keys-and-modes): absolute,
 * https (http only for localhost), without query, fragment or credentials, at most 2048 characters.
 */
export function isRegistrableRedirectUri(value: unknown): boolean {
  if (typeof value !== 'string' || value.length > 2048) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  const scheme = url.protocol === 'https:' || (url.protocol === 'http:' && LOCAL_HOSTS.has(url.hostname));
  return scheme && !url.search && !url.hash && !value.includes('?') && !value.includes('#') && !url.username && !url.password;
}

export const IsRegistrableRedirectUri = (options?: ValidationOptions) =>
  ValidateBy(
    {
      name: 'isRegistrableRedirectUri',
      validator: {
        validate: isRegistrableRedirectUri,
        defaultMessage: () => 'must be an absolute https URL (http only for localhost) without query or fragment',
      },
    },
    options,
  );

export const IsUtcTimestamp = (options?: ValidationOptions) =>
  ValidateBy(
    {
      name: 'isUtcTimestamp',
      validator: {
        validate: isUtcTimestamp,
        defaultMessage: () => 'must be an RFC 3339 UTC timestamp with seconds, ending in Z, such as 2026-12-01T09:00:00Z',
      },
    },
    options,
  );

export const IsTimeZone = (options?: ValidationOptions) =>
  ValidateBy(
    {
      name: 'isTimeZone',
      validator: { validate: isTimeZone, defaultMessage: () => 'must be an IANA time zone name as the tz database writes it, such as Europe/Berlin' },
    },
    options,
  );

export const IsCurrencyCode = (options?: ValidationOptions) =>
  ValidateBy(
    {
      name: 'isCurrencyCode',
      validator: {
        validate: (value) => typeof value === 'string' && /^[A-Z]{3}$/.test(value) && ISO_CURRENCIES.has(value),
        defaultMessage: () => 'must be a three-letter uppercase ISO 4217 code',
      },
    },
    options,
  );

/** A timestamp later than the object's `property` (checked once both are valid timestamps). */
export const IsAfter = (property: string, options?: ValidationOptions) =>
  ValidateBy(
    {
      name: 'isAfter',
      constraints: [property],
      validator: {
        validate: (value, args) => Date.parse(value as string) > Date.parse((args?.object as Record<string, string>)[property]),
        defaultMessage: (args) => `must be after ${args?.constraints[0]}`,
      },
    },
    { ...options, context: { afterFields: true } satisfies RuleContext },
  );
