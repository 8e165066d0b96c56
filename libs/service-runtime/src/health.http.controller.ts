import { Controller, Get, Inject, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiAnswer } from './api-answer.decorator';
import { INFRASTRUCTURE } from './infrastructure.tokens';
import { Infrastructure } from './infrastructure';
import { processorProblems } from './processor-status';
import { newId } from '@campaign-ops/ids';
import { HealthResponse, ReadinessResponse } from './health.responses';

/** Liveness and readiness for Kubernetes probes, in the API's envelope. */
@ApiTags('Operations')
@Controller()
export class HealthController {
  constructor(@Inject(INFRASTRUCTURE) private readonly infrastructure: Infrastructure) {}

  @Get('healthz')
  @ApiOperation({ operationId: 'getHealth', summary: 'Liveness' })
  @ApiAnswer(HealthResponse, { rateLimited: false })
  healthz(@Res() res: Response) {
    res.json({ success: true, data: { status: 'ok' }, request_id: res.getHeader('X-Request-Id') ?? newId('req') });
  }

  @Get('readyz')
  @ApiOperation({ operationId: 'getReadiness', summary: 'Readiness', description: 'Every dependency reachable; else 503 with `checks`.' })
  @ApiAnswer(ReadinessResponse, { rateLimited: false })
  async readyz(@Res() res: Response) {
    const checks: Array<readonly [string, string]> = await Promise.all(
      (['eventStore', 'readStore', 'bus'] as const).map(async (name) => {
        try {
          await this.infrastructure[name].ping();
          return [name, 'ok'] as const;
        } catch (error) {
          return [name, `unreachable: ${(error as Error).message}`] as const;
        }
      }),
    );
    // A processor that refuses to run (its checkpoint ahead of the event store's head) says why.
    const refusing = Object.entries(processorProblems());
    checks.push(['processors', refusing.length === 0 ? 'ok' : refusing.map(([name, problem]) => `${name}: ${problem}`).join('; ')]);
    const ready = checks.every(([, status]) => status === 'ok');
    const requestId = res.getHeader('X-Request-Id') ?? newId('req');
    if (ready) {
      res.json({ success: true, data: { status: 'ready', checks: Object.fromEntries(checks) }, request_id: requestId });
    } else {
      res.status(503).setHeader('Retry-After', '5');
      res.json({
        success: false,
        error: {
          type: 'api_error',
          code: 'service_unavailable',
          message: refusing.length === 0 ? 'A dependency is unreachable.' : 'A dependency is unreachable, or a processor refuses to run.',
          checks: Object.fromEntries(checks),
        },
        request_id: requestId,
      });
    }
  }
}
