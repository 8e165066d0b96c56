import { Inject, Injectable } from '@nestjs/common';
import { Collection, READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { webhookStreamId } from '@campaign-ops/webhook-domain';
import { EndpointStore } from './endpoint-store';
import { WEBHOOK_SETTINGS } from './webhook-delivery.tokens';

interface HealthView {
  id: string;
  /** When the current run of failures began; null after a success. */
  failing_since: string | null;
  [key: string]: unknown;
}

/**
 * Disables an endpoint whose deliveries have all failed for `disableAfterMs` (5 days by default):
 * a partner who went away stops costing retries, and sees why in `disabled_reason`.
 */
@Injectable()
export class EndpointHealth {
  private readonly health: Collection<HealthView>;
  private readonly disableAfterMs: number;

  constructor(
    @Inject(READ_STORE) readStore: ReadStore,
    private readonly endpoints: EndpointStore,
    @Inject(WEBHOOK_SETTINGS) settings: { disableAfterMs: number },
  ) {
    this.disableAfterMs = settings.disableAfterMs;
    // Read at every delivery's outcome, written only when an endpoint starts or stops failing.
    this.health = readStore.collection<HealthView>('webhook_endpoint_health', { readMostly: true });
  }

  async recordSuccess(endpointId: string): Promise<void> {
    const current = await this.health.get(endpointId);
    if (current?.failing_since) await this.health.update(endpointId, { failing_since: null });
  }

  async recordFailure(endpointId: string, now: Date): Promise<void> {
    const current = await this.health.get(endpointId);
    if (!current) {
      await this.health.insert({ id: endpointId, failing_since: now.toISOString() });
      return;
    }
    if (!current.failing_since) {
      await this.health.update(endpointId, { failing_since: now.toISOString() });
      return;
    }
    if (now.getTime() - Date.parse(current.failing_since) < this.disableAfterMs) return;
    const view = await this.endpoints.views.get(endpointId);
    if (!view || view.deleted || !view.enabled) return;
    const reason = `Every delivery has failed since ${current.failing_since}; the endpoint was disabled. Fix it, then PATCH enabled: true.`;
    await this.endpoints.repository.execute(
      webhookStreamId(endpointId),
      { type: 'DisableEndpoint', reason, now: now.toISOString() },
      { accountId: view.account_id, mode: view.mode },
    );
    await this.endpoints.refreshView(webhookStreamId(endpointId));
    await this.health.update(endpointId, { failing_since: null });
  }
}
