import { ApiExtension } from '@nestjs/swagger';

/** The OpenAPI extension that carries a route's answer to the gateway's document builder. */
export const API_ANSWER = 'x-answer';

export interface ApiAnswerOptions {
  /** A list: `data` is an array and the envelope has `has_more`; paginated unless `paginated: false`; filtered by the query DTO's fields. */
  list?: { paginated?: boolean; query?: abstract new (...args: never[]) => unknown };
  /** Codes this route answers besides those every route of its kind does (libs/gateway/src/openapi/route-errors.ts). */
  errors?: readonly string[];
  /** Answered outside the envelope, as this media type. */
  raw?: 'application/json' | 'text/html' | 'text/plain';
  /** `false` for the probes, which the rate limit never counts. */
  rateLimited?: false;
  /** Answered with a 302 and `Location` (a browser's round trip, e.g. the OAuth callback) instead of 200, `resource` in the envelope as ever. */
  redirect?: true;
}

/** What a route answers as `data` (a response DTO, e.g. `DispatchResponse` of libs/api-contract; its schema is named without `Response`), and how. */
export const ApiAnswer = (resource: abstract new (...args: never[]) => unknown, options: ApiAnswerOptions = {}) =>
  ApiExtension(API_ANSWER, {
    resource: resource.name.replace(/Response$/, ''),
    ...options,
    list: options.list && { paginated: options.list.paginated !== false, query: options.list.query?.name },
  });

/** The extension as the document builder reads it. */
export interface ApiAnswerExtension extends Omit<ApiAnswerOptions, 'list'> {
  /** The name of the response DTO's schema. */
  resource: string;
  list?: { paginated: boolean; query?: string };
}
