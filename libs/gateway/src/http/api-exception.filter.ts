import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Injectable, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { ApiError } from '@campaign-ops/api-errors';
import { newId } from '@campaign-ops/ids';
import { GatewayRequest } from './request-context';
import { ApiDocument } from '../openapi/api-document';

/**
 * The one place errors become HTTP: docs/api.md's envelope, status and type from the catalog. Anything
 * unexpected is logged with its request id and answered as a bare 500, never with a stack.
 */
@Catch()
@Injectable()
export class ApiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  constructor(private readonly routes: ApiDocument) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<GatewayRequest>();
    const response = host.switchToHttp().getResponse<Response>();
    const error = this.toApiError(exception, request);
    if (response.headersSent) return;
    const requestId = request.requestId ?? newId('req');
    for (const [name, value] of Object.entries(error.headers)) response.setHeader(name, value);
    response.status(error.status).json({
      success: false,
      error: {
        type: error.type,
        code: error.code,
        message: error.message,
        ...(error.param ? { param: error.param } : {}),
        ...(error.providerCode !== undefined ? { provider_code: error.providerCode } : {}),
      },
      request_id: requestId,
    });
  }

  private toApiError(exception: unknown, request: GatewayRequest): ApiError {
    if (exception instanceof ApiError) return exception;
    if (exception instanceof HttpException && exception.getStatus() === 404) {
      const allowed = this.routes.allowedMethods(request.path);
      if (allowed.length > 0) {
        return new ApiError('method_not_allowed', `${request.method} is not allowed on ${shown(request.path)}; use ${allowed.join(', ')}.`, undefined, {
          Allow: allowed.join(', '),
        });
      }
      return noRoute(request);
    }
    // A path that does not decode (e.g. `%E0%A4%A`) names no route.
    if (
      exception instanceof URIError ||
      (exception instanceof HttpException && exception.getStatus() === 400 && /^Failed to decode param/.test(exception.message))
    ) {
      return noRoute(request);
    }
    // body-parser style errors from express itself (e.g. an aborted upload)
    const status = (exception as { status?: number })?.status;
    if (status === 413) return new ApiError('payload_too_large', 'The body is larger than 65536 bytes.');
    this.logger.error(
      JSON.stringify({
        msg: 'unhandled error',
        request_id: request.requestId,
        method: request.method,
        path: request.path,
        error: (exception as Error)?.message,
      }),
      (exception as Error)?.stack,
    );
    return new ApiError('internal_error', 'Something went wrong on our side; the request id helps us find it.');
  }
}

/** The longest path an error message repeats: a 16 KB path is not echoed back whole. */
const SHOWN_PATH_CHARS = 200;
const shown = (path: string) => (path.length > SHOWN_PATH_CHARS ? `${path.slice(0, SHOWN_PATH_CHARS)}…` : path);

/** 404 route_not_found, naming the method and (the start of) the path. */
export function noRoute(request: { method: string; path: string }): ApiError {
  return new ApiError('route_not_found', `No route ${request.method} ${shown(request.path)}.`);
}
