import { envInt } from './common';

/** The bench's settings, from its BENCH_* variables (see main.ts). */
export function settings() {
  const launches = envInt('BENCH_LAUNCHES', 2000, 1, 100_000);
  return {
    launches,
    concurrency: envInt('BENCH_CONCURRENCY', 32, 1, 1024),
    warmupLaunches: envInt('BENCH_WARMUP_LAUNCHES', 5000, 1, 100_000),
    baselineRequests: envInt('BENCH_BASELINE_REQUESTS', 10_000, 1, 1_000_000),
    headroomRequests: envInt('BENCH_HEADROOM_REQUESTS', 30_000, 1, 1_000_000),
    pacedRate: envInt('BENCH_PACED_RATE', 500, 1, 100_000),
    pacedMs: envInt('BENCH_PACED_SECONDS', 10, 1, 600) * 1000,
    maxSockets: envInt('BENCH_PACED_MAX_SOCKETS', 256, 1, 10_000),
    webhookEndpoints: envInt('BENCH_WEBHOOK_ENDPOINTS', 20, 1, 50),
    webhookLaunches: envInt('BENCH_WEBHOOK_LAUNCHES', 100, 1, 100_000),
    fairnessRate: envInt('BENCH_FAIRNESS_RATE', 10, 1, 1000),
    fairnessControlMs: envInt('BENCH_FAIRNESS_CONTROL_S', 5, 1, 600) * 1000,
    fairnessOutageMs: envInt('BENCH_FAIRNESS_OUTAGE_S', 20, 1, 600) * 1000,
    fairnessRecoveryMs: envInt('BENCH_FAIRNESS_RECOVERY_S', 45, 1, 3600) * 1000,
    idleMs: envInt('BENCH_IDLE_S', 10, 1, 600) * 1000,
    idleSettleMs: envInt('BENCH_IDLE_SETTLE_S', 60, 0, 600) * 1000,
    natsLaunches: envInt('BENCH_NATS_LAUNCHES', launches, 1, 100_000),
    gentleRate: envInt('BENCH_GENTLE_RATE', 40, 1, 100_000),
    gentleMs: envInt('BENCH_GENTLE_SECONDS', 10, 1, 600) * 1000,
    natsPacedRate: envInt('BENCH_NATS_PACED_RATE', 200, 1, 100_000),
    natsPacedMs: envInt('BENCH_NATS_PACED_SECONDS', 10, 1, 600) * 1000,
    overloadRate: envInt('BENCH_OVERLOAD_RATE', 2000, 1, 100_000),
    overloadMs: envInt('BENCH_OVERLOAD_SECONDS', 3, 1, 600) * 1000,
    overloadBoundSeconds: envInt('BENCH_OVERLOAD_BOUND_S', 2, 1, 3600),
    stageLaunches: envInt('BENCH_STAGE_LAUNCHES', 2000, 1, 100_000),
    webhookTimeoutMs: envInt('BENCH_WEBHOOK_TIMEOUT_S', 120, 1, 3600) * 1000,
    deadlineMs: envInt('BENCH_DEADLINE_S', 900, 10, 24 * 3600) * 1000,
  };
}
export type Settings = ReturnType<typeof settings>;
