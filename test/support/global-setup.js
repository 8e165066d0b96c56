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
  process.env.CONTAINER_RUNTIME = unavailable ? `unavailable: ${unavailable}` : 'available';
};
