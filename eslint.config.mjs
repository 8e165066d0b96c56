// ESLint (flat config): typescript-eslint's recommended rules, without type information so the whole
// repo lints in seconds, and Nx's module boundaries, which keep the layering DESIGN.md draws.
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

// Who may import whom, by the `type:` tag in each project.json. Specs and `testing/` folders get
// the few extra edges listed in testDepConstraints below, nothing more.
const depConstraints = [
  { sourceTag: 'type:domain', onlyDependOnLibsWithTags: ['type:domain', 'type:util'] },
  { sourceTag: 'type:contract', onlyDependOnLibsWithTags: ['type:contract', 'type:domain', 'type:util'] },
  { sourceTag: 'type:util', onlyDependOnLibsWithTags: ['type:util'] },
  { sourceTag: 'type:infrastructure', onlyDependOnLibsWithTags: ['type:infrastructure', 'type:util'] },
  { sourceTag: 'type:adapter', onlyDependOnLibsWithTags: ['type:adapter', 'type:domain', 'type:util'] },
  { sourceTag: 'type:application', onlyDependOnLibsWithTags: ['type:application', 'type:domain', 'type:infrastructure', 'type:util', 'type:contract'] },
  { sourceTag: 'type:service', notDependOnLibsWithTags: ['type:app'] },
  { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['*'] },
  { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:testing', 'type:infrastructure', 'type:util'] },
];

// Specs and `testing/` folders may also use the container test helpers (type:testing), the fakes and
// clients in the root test/support folder, and their own lib's testing entry point.
const testDepConstraints = depConstraints.map((c) =>
  c.onlyDependOnLibsWithTags && !c.onlyDependOnLibsWithTags.includes('*')
    ? { ...c, onlyDependOnLibsWithTags: [...c.onlyDependOnLibsWithTags, 'type:testing'] }
    : c,
);

// Known cycle, to be removed: event-store's specs (canonical-json, the EventStoreDB spec) import
// event-sourcing, which imports event-store; through service-runtime's checkpointed processor too.
const ignoredCircularDependencies = [
  ['event-sourcing', 'event-store'],
  ['service-runtime', 'event-store'],
];

const boundaries = (constraints, extra = {}) => [
  'error',
  { enforceBuildableLibDependency: false, allow: [], ignoredCircularDependencies, depConstraints: constraints, ...extra },
];

// Known edges against the layering, to be removed ; each
// entry is one project and the tags it still reaches beyond its rule, nothing wider.
const knownExceptions = [
  // service-runtime (infrastructure) serves the health and answer decorators from api-contract and
  // the bus subjects from service-messages.
  { files: ['libs/service-runtime/src/**/*.ts'], sourceTag: 'type:infrastructure', extra: ['type:contract'] },
  // event-store's EventStoreDB spec exercises the event-sourcing repository against a real server.
  { files: ['libs/event-store/src/**/*.spec.ts'], sourceTag: 'type:infrastructure', extra: ['type:application'] },
];
const widened = (sourceTag, extra, base) =>
  base.map((c) =>
    c.sourceTag === sourceTag ? { ...c, onlyDependOnLibsWithTags: extra.includes('*') ? ['*'] : [...c.onlyDependOnLibsWithTags, ...extra] } : c,
  );
const testFiles = ['**/*.spec.ts', '**/testing/**/*.ts'];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'reports/**', 'tmp/**', 'coverage/**', '.stryker-tmp/**', '**/*.js', '**/*.cjs', '**/*.mjs'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@nx/enforce-module-boundaries': boundaries(depConstraints),
      // `_name` marks a parameter or binding kept for its position or shape (fakes that implement a port).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    files: testFiles,
    rules: {
      '@nx/enforce-module-boundaries': boundaries(testDepConstraints, { allowCircularSelfDependency: true, allow: ['^(\\.\\./)+test/support/'] }),
    },
  },
  {
    // Test code reads untyped JSON answers and CommonJS-only tools (js-yaml, ajv formats) on purpose:
    // `any` and require() there are the honest types, not a shortcut.
    files: [...testFiles, 'test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-require-imports': 'off',
      // Specs take Nest's DTO classes and decorated prototypes as `Function`, as Nest's own types do.
      '@typescript-eslint/no-unsafe-function-type': 'off',
    },
  },
  {
    // The bench is a load harness over the HTTP API: it reads untyped JSON answers, as the tests do.
    files: ['apps/bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  ...knownExceptions.flatMap(({ files, sourceTag, extra }) => [
    { files, rules: { '@nx/enforce-module-boundaries': boundaries(widened(sourceTag, extra, depConstraints)) } },
    {
      files: files.map((f) => f.replace(/\*\*\/\*\.(spec\.)?ts$/, '**/*.spec.ts')),
      rules: {
        '@nx/enforce-module-boundaries': boundaries(widened(sourceTag, extra, testDepConstraints), {
          allowCircularSelfDependency: true,
          allow: ['^(\\.\\./)+test/support/'],
        }),
      },
    },
  ]),
);
