// Runs once before every test file: asks, quickly, whether a container runtime answers, so the
// testcontainers suites can be skipped (and say so) without each waiting on its own.
module.exports = async function globalSetup() {
  if (process.env.CONTAINER_RUNTIME !== undefined) return;
  const { getContainerRuntimeClient } = require('testcontainers');
  const timeoutMs = 5000;
  const unavailable = await Promise.race([
    getContainerRuntimeClient().then(
      () => '',
      (error) => `no container runtime answers (${String(error.message).split('\n')[0]})`,
    ),
    new Promise((resolve) => setTimeout(() => resolve(`no container runtime answered within ${timeoutMs} ms`), timeoutMs).unref()),
  ]);
  // Where containers are the point (the GitHub workflow), a missing runtime fails the run instead of skipping.
  if (unavailable && process.env.REQUIRE_CONTAINERS === 'true') throw new Error(`REQUIRE_CONTAINERS=true, but ${unavailable}`);
  process.env.CONTAINER_RUNTIME = unavailable ? `unavailable: ${unavailable}` : 'available';
};
