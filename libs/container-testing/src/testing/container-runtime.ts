/**
 * Whether a container runtime answers, as the suite's global setup found out once
 * (test/support/global-setup.js): null when one does, else why not. Build machines here have a
 * docker client but no engine.
 */
export function containerRuntimeUnavailable(): string | null {
  const state = process.env.CONTAINER_RUNTIME ?? 'unavailable: the global setup did not run';
  return state === 'available' ? null : state.replace(/^unavailable: /, '');
}

/**
 * A describe block that needs containers (EventStoreDB, MongoDB, NATS through testcontainers).
 * Where no runtime answers it prints one line saying so and its tests are skipped; the same
 * contract suites run against the embedded adapters and a real nats-server everywhere.
 */
export function describeWithContainers(name: string, body: () => void): void {
  const unavailable = containerRuntimeUnavailable();
  if (unavailable) {
    process.stdout.write(`SKIPPED ${name}: ${unavailable}\n`);
    describe.skip(name, body);
  } else {
    describe(name, body);
  }
}
