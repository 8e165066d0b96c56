import { ArgumentsHost, Catch, RpcExceptionFilter } from '@nestjs/common';
import { Observable, throwError } from 'rxjs';

/**
 * A failing handler's error goes back to the bus as it is: a request's caller gets its message
 * (BusRemoteError), a durable message is redelivered. NestJS's default would replace the message
 * with "Internal server error".
 */
@Catch()
export class BusExceptionFilter implements RpcExceptionFilter<unknown> {
  catch(exception: unknown, _host: ArgumentsHost): Observable<never> {
    return throwError(() => exception);
  }
}
