import { ERROR_CATALOG, ErrorCode } from '@campaign-ops/api-errors';

/** What the document builder knows of an operation: read from the controller's decorators. */
export interface RouteKind {
  method: string;
  /** OpenAPI form: `{name}` marks a path parameter. */
  path: string;
  auth: 'apiKey' | 'admin' | 'none';
  body: boolean;
  list?: { paginated: boolean };
  errors?: readonly string[];
  rateLimited?: false;
  /** Takes whatever query it is given (named with @ApiQuery, e.g. the OAuth callback), so never refuses an unknown parameter. */
  openQuery?: boolean;
}

/**
 * The codes a route can answer: those its kind brings (the guard of its auth, the body reader,
 * the list parser, idempotency on POST, a missing id, the limits every answer is under) and the
 * route's own `errors`.
 */
export function errorCodesOf(route: RouteKind): ErrorCode[] {
  const codes = new Set<ErrorCode>();
  const add = (...more: readonly ErrorCode[]) => more.forEach((code) => codes.add(code));
  if (route.auth === 'apiKey') add('api_key_missing', 'api_key_invalid', 'api_key_revoked');
  // The Admin API answers 404 route_not_found while ADMIN_TOKEN is not set.
  if (route.auth === 'admin') add('api_key_missing', 'api_key_invalid', 'route_not_found');
  if (route.body) add('parameter_missing', 'parameter_invalid', 'parameter_unknown');
  // Any request may carry a body, and the body reader judges it before the route does: not JSON, not
  // application/json, or over 64 KiB.
  add('body_invalid_json', 'payload_too_large', 'unsupported_media_type');
  if (route.list?.paginated) add('parameter_invalid');
  // A query parameter the route does not take is refused: by the list's query DTO, or by UnknownQueryInterceptor on any route without a query.
  if (!route.openQuery) add('parameter_unknown');
  if (route.method === 'POST') add('parameter_invalid', 'idempotency_key_reused', 'idempotency_key_in_use');
  if (route.path.includes('/{')) add('resource_missing');
  for (const code of route.errors ?? []) {
    if (!(code in ERROR_CATALOG)) throw new Error(`${route.method} ${route.path}: ${code} is not in the error catalog`);
    add(code as ErrorCode);
  }
  if (route.rateLimited !== false) add('rate_limited');
  add('internal_error', 'service_unavailable');
  return [...codes];
}

/** The same codes by HTTP status, statuses in ascending order. */
export function errorCodesByStatus(route: RouteKind): Map<number, ErrorCode[]> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(route)) {
    const status = ERROR_CATALOG[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return new Map([...byStatus].sort(([a], [b]) => a - b));
}
