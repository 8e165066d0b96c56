/**
 * The overload bound (docs/api.md#dispatches-and-retries, "Overload"), shown: a standalone process of its own, started with
 * a short DISPATCH_BACKLOG_SECONDS, is sent launches far faster than it carries them (an open
 * loop). Shed cleanly means every answer is 200 or 503 `service_unavailable` (nothing else, no
 * timeout), and every accepted launch's signed dispatch.completed still arrives.
 */
import { acceptedOf, LAUNCH_BODY, openAccount, progress, waitForCompletions } from './common';
import { ascending, pacedLoop, percentile, Sent } from './load';
import { ms, Report, row } from './report';
import { startStandalone } from './systems';
import { WebhookReceiver } from './webhook-receiver';

export interface OverloadSettings {
  rate: number;
  durationMs: number;
  maxSockets: number;
  boundSeconds: number;
  webhookTimeoutMs: number;
}

const distribution = (sent: Sent[]) => {
  const sorted = ascending(sent.map((s) => s.latencyMs));
  return sorted.length ? `p50 ${ms(percentile(sorted, 50))}  p99 ${ms(percentile(sorted, 99))}` : '-';
};

export async function overloadBurst(
  report: Report,
  root: string,
  receiver: WebhookReceiver,
  caCertPath: string,
  retrySchedule: string,
  s: OverloadSettings,
): Promise<void> {
  const title = `overload (a process of its own, DISPATCH_BACKLOG_SECONDS=${s.boundSeconds})`;
  progress(`${title}: starting it`);
  const system = await startStandalone(root, caCertPath, retrySchedule, { env: { DISPATCH_BACKLOG_SECONDS: String(s.boundSeconds) } });
  try {
    const headers = await openAccount(system.base, receiver, 'bench-overload', [{ route: 'overload', events: ['dispatch.completed'] }]);
    system.markReady();
    progress(`${title}: launches at ${s.rate}/s for ${s.durationMs / 1000} s`);
    const run = await pacedLoop(s.rate, s.durationMs, s.maxSockets, `${system.base}/v1/campaigns`, headers, LAUNCH_BODY);
    const { sent: accepted, ids } = acceptedOf(run);
    const refused = run.sent.filter((x) => x.status === 503 && x.body?.error?.code === 'service_unavailable');
    const other = run.sent.length - accepted.length - refused.length;
    progress(`${title}: ${accepted.length} accepted, ${refused.length} refused; waiting for the accepted ones' webhooks`);
    const route = receiver.route('overload');
    const delivered = await waitForCompletions(route, ids, s.webhookTimeoutMs);
    const e2e = ascending(accepted.map((x) => (route.completedAt.get(x.body.data.id) ?? Infinity) - x.startedAt));
    report.goal({
      label: `overload: ${s.rate}/s burst shed cleanly`,
      figure: `${refused.length}/${run.sent.length} got 503`,
      target: 'else 200, done',
      baseline: `${accepted.length} accepted, ${delivered} completed`,
      met: other === 0 && delivered === ids.length,
    });
    report.section(`${title}: open loop, ${s.rate} launches/s for ${s.durationMs / 1000} s`, [
      row('answered 200 (accepted)', `${accepted.length}/${run.sent.length}   POST ${distribution(accepted)}`),
      row('answered 503 service_unavailable', `${refused.length}/${run.sent.length}   POST ${distribution(refused)}`),
      row('any other answer', `${other}`),
      row('accepted -> signed dispatch.completed', `${delivered}/${ids.length} delivered   p50 ${ms(percentile(e2e, 50))}  p99 ${ms(percentile(e2e, 99))}`),
    ]);
    if (other > 0) report.problem(`${title}: ${other} launches answered neither 200 nor 503 service_unavailable`);
    if (delivered < ids.length)
      report.problem(`${title}: only ${delivered}/${ids.length} accepted launches' webhooks arrived within ${s.webhookTimeoutMs / 1000} s`);
  } finally {
    await system.stop();
  }
}
