import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FOUR_APPS_NODE_OPTIONS } from './systems';

describe('the four apps as the bench starts them', () => {
  it("run with the NODE_OPTIONS that docs/operations.md's four apps on one machine export", () => {
    const operations = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'operations.md'), 'utf8');
    expect(operations).toContain(`export NODE_OPTIONS=${FOUR_APPS_NODE_OPTIONS} `);
  });
});
