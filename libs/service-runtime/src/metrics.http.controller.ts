import { Controller, Get, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiAnswer } from './api-answer.decorator';
import { registry } from './metrics';

/** Prometheus scrape endpoint, on every app. */
@ApiTags('Operations')
@Controller()
export class MetricsController {
  @Get('metrics')
  @ApiOperation({ operationId: 'getMetrics', summary: 'Prometheus metrics', description: 'Request rates and latencies, dispatches by status, deliveries by outcome, consumer lag, processor checkpoint age.' })
  @ApiAnswer('MetricsText', { raw: 'text/plain', rateLimited: false })
  async metrics(@Res() response: Response): Promise<void> {
    response.setHeader('Content-Type', registry.contentType);
    response.send(await registry.metrics());
  }
}
