import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { newId } from '@campaign-ops/ids';

/**
 * A request Node's parser refuses before any of our code sees it (a control character in a header
 * value, a malformed request line, headers too large) is still answered in the API's envelope
 * (docs/api.md#errors: every answer, on every path), with its request id, instead of Node's bare
 * `400 Bad Request` without a body. The connection is closed after it: what follows on it cannot
 * be read.
 */
export function answerMalformedRequestsInTheEnvelope(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    // 400 for headers too large as well: docs/api.md's statuses have no 431.
    const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
    const requestId = newId('req');
    const body = JSON.stringify({
      success: false,
      error: {
        type: 'invalid_request_error',
        code: 'parameter_invalid',
        message: tooLarge
          ? 'The request headers are too large.'
          : 'The request cannot be read: its request line or a header is malformed (e.g. a control character in a header value).',
      },
      request_id: requestId,
    });
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
