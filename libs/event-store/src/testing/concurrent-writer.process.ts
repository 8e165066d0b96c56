/**
 * A separate process for sqlite-event-store.spec.ts, appending to the same file as other processes at
 * the same time: `node -r @swc-node/register concurrent-writer.process.ts <file> <writer> <rounds>`.
 * Each round appends one event to the writer's own stream and one to `shared-1`, which every writer
 * races for with optimistic concurrency (read the revision, append expecting it, retry on conflict).
 */
import { randomUUID } from 'node:crypto';
import { WrongExpectedRevisionError } from '../event-store.port';
import { SqliteEventStore } from '../sqlite-event-store';

async function main(file: string, writer: string, rounds: number): Promise<void> {
  const store = SqliteEventStore.open(file);
  for (let round = 0; round < rounds; round++) {
    const event = () => ({ id: randomUUID(), type: 'Written', data: { writer, round } });
    await store.append(`own-${writer}`, [event()], { expectedRevision: round === 0 ? 'no_stream' : round - 1 });
    for (;;) {
      const [last] = await store.readStream('shared-1', { direction: 'backwards', maxCount: 1 });
      try {
        await store.append('shared-1', [event()], { expectedRevision: last?.revision ?? 'no_stream' });
        break;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
      }
    }
  }
  await store.close();
}

const [file, writer, rounds] = process.argv.slice(2);
main(file, writer, Number(rounds)).catch((error) => {
  console.error(error);
  process.exit(1);
});
