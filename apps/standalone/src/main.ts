import 'reflect-metadata';
import { configureHttp } from '@campaign-ops/gateway';
import { exitOnStartFailure, loadConfig, startApp } from '@campaign-ops/service-runtime';
import { AppModule } from './app.module';

/**
 * The whole service in one process on embedded storage (SQLite in DATA_DIR) and the in-process
 * bus: what `npm start` runs on a fresh machine. Set NATS_URL to use NATS instead.
 */
async function main() {
  const config = loadConfig('standalone');
  await startApp(config, AppModule.forConfig(config), configureHttp);
  const base = `http://localhost:${config.port}`;
  const howToGetAKey = config.adminToken
    ? [
        `  curl -s -X POST ${base}/admin/v1/accounts -H "Authorization: Bearer $ADMIN_TOKEN" -H "Content-Type: application/json" -d '{"name":"My company"}'`,
        `  curl -s -X POST ${base}/admin/v1/accounts/<acct_id>/keys -H "Authorization: Bearer $ADMIN_TOKEN" -H "Content-Type: application/json" -d '{"mode":"test"}'`,
      ]
    : [
        `  DATA_DIR=${config.dataDir} npm run ops -- accounts create --name "My company"`,
        `  DATA_DIR=${config.dataDir} npm run ops -- keys create --account <acct_id> --mode test`,
        '  (or set ADMIN_TOKEN to enable the Admin API)',
      ];
  process.stdout.write(
    [
      '',
      `Campaign operations service listening on ${base} (data in ${config.dataDir}).`,
      'Get an API key:',
      ...howToGetAKey,
      `Then: curl -s ${base}/v1/account -H "Authorization: Bearer <mk_test_...>"`,
      '',
    ].join('\n') + '\n',
  );
}

main().catch(exitOnStartFailure);
