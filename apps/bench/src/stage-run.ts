import { launchesAwaited, openAccount, progress } from './common';
import { Report } from './report';
import { monotonicMicros, SampleWindow, stageSection } from './stage-table';
import { RunningSystem, SystemOptions } from './systems';
import { WebhookReceiver } from './webhook-receiver';

/** `goalMicros`: the CPU goal for a whole launch, µs, shown in the table's title. */
export type StageRunSettings = { warmup: number; launches: number; concurrency: number; webhookTimeoutMs: number; goalMicros: number };

/**
 * The stage table's own run: V8's profiler costs a process CPU of its own (about 1 ms a launch and
 * several % of a core idle, measured), so the measured phases run on a process without it, and
 * the table comes from a twin that is profiled: started fresh, warmed up as the measured system
 * was, then a closed loop of `launches` with every webhook awaited, stopped (its profiles are written
 * at exit), and read over that loop's window per launch it accepted.
 */
export async function stageRun(
  report: Report,
  title: string,
  start: (options: SystemOptions) => Promise<RunningSystem>,
  receiver: WebhookReceiver,
  s: StageRunSettings,
): Promise<void> {
  progress(`${title}, profiled for the stage table: ${s.launches} launches at concurrency ${s.concurrency}`);
  const system = await start({ profile: true });
  let accepted = 0;
  let window: SampleWindow | undefined;
  try {
    const headers = await openAccount(system.base, receiver, 'bench-stages', [{ route: 'stages', events: ['dispatch.completed'] }]);
    system.markReady();
    const loop = async (launches: number) =>
      (
        await launchesAwaited('stage table run', system.base, headers, receiver.route('stages'), {
          launches,
          concurrency: s.concurrency,
          timeoutMs: s.webhookTimeoutMs,
        })
      ).ids.length;
    await loop(s.warmup);
    const from = monotonicMicros();
    accepted = await loop(s.launches);
    window = { from, to: monotonicMicros() };
  } finally {
    await system.stop();
  }
  stageSection(report, `${title}, a profiled run of its own`, system.profileDir!, accepted, s.goalMicros, window);
}
