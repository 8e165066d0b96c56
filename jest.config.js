// One Jest run for the whole monorepo: libs and apps unit/contract tests, and test/e2e.
// @swc/jest keeps the suite fast; decorator metadata is on for NestJS.
const swc = [
  '@swc/jest',
  {
    jsc: {
      target: 'es2022',
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
    },
    module: { type: 'commonjs' },
  },
];

module.exports = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': swc },
  moduleNameMapper: {
    '^@campaign-ops/testing/([a-z0-9-]+)$': '<rootDir>/libs/$1/src/testing/index.ts',
    '^@campaign-ops/adapters/([a-z0-9-]+)$': '<rootDir>/libs/$1/src/adapters/index.ts',
    '^@campaign-ops/([a-z0-9-]+)$': '<rootDir>/libs/$1/src/index.ts',
  },
  testMatch: ['<rootDir>/libs/**/*.spec.ts', '<rootDir>/apps/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  testTimeout: 30000,
  globalSetup: '<rootDir>/test/support/global-setup.js',
};
