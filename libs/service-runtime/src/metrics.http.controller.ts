import { Controller, Get, Res } from '@nestjs/common';
import type { Response } from 'express';
import { registry } from './metrics';

/** Prometheus scrape endpoint, on every app. */
@Controller()
export class MetricsController {
  @Get('metrics')
  async metrics(@Res() response: Response): Promise<void> {
    response.setHeader('Content-Type', registry.contentType);
    response.send(await registry.metrics());
  }
}
