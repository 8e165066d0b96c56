// The Jest run that StrykerJS uses to judge mutants: the unit and in-process specs of the code it
// mutates (and of the code that calls it), without the end-to-end tests, which start the built
// dist/ (never the mutated source) and would only slow every mutant down.
const base = require('./jest.config');

const LIBS = [
  'account-domain',
  'accounts',
  'connection-domain',
  'connections',
  'decider',
  'dispatch-domain',
  'dispatching',
  'gateway',
  'secret-box',
  'url-guard',
  'webhook-delivery',
  'webhook-domain',
  'webhook-sender',
  'webhook-signing',
];

module.exports = {
  ...base,
  testMatch: LIBS.map((lib) => `<rootDir>/libs/${lib}/src/**/*.spec.ts`),
  // The container runtime probe serves only the EventStoreDB/MongoDB suites, which are not here.
  globalSetup: undefined,
};
