/**
 * The API's description as a partner fetches it from the built standalone process: the OpenAPI
 * document and the HTML docs, with no key, outside the envelope.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, ServiceProcess } from '../support/service-process';

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe('standalone service, its OpenAPI document and docs', () => {
  let dataDir: string;
  let service: ServiceProcess;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-openapi-'));
    service = await ServiceProcess.start('standalone', { DATA_DIR: dataDir });
  });

  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves GET /openapi.json without a key: the raw OpenAPI 3.1 document of this version', async () => {
    const response = await fetch(`${service.url}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
    expect(response.headers.get('ratelimit-limit')).toMatch(/^\d+$/);
    const document = (await response.json()) as { paths: object; webhooks: object };
    expect(document).toMatchObject({ openapi: '3.1.0', info: { version: VERSION }, servers: [{ url: '/' }] });
    expect(document).not.toHaveProperty('success');
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/v1/campaigns', '/v1/dispatches/{id}', '/v1/webhooks/{id}/deliveries', '/v1/events', '/openapi.json', '/docs']),
    );
    expect(Object.keys(document.webhooks)).toEqual([
      'dispatch.accepted',
      'dispatch.completed',
      'dispatch.failed',
      'connection.active',
      'connection.reauth_required',
    ]);
  });

  it('serves GET /docs without a key: Swagger UI, its scripts and styles from this service only (swagger-ui-dist), on this document', async () => {
    const response = await fetch(`${service.url}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const policy = response.headers.get('content-security-policy') ?? '';
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("script-src 'self'");
    const page = await response.text();
    expect(page).toContain('<!DOCTYPE html>');
    expect(page).toContain('<title>Campaign Operations API</title>');
    expect(page).not.toMatch(/(src|href)=["']?(https?:)?\/\//i);
    const scripts = [...page.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]);
    expect(scripts).toEqual(expect.arrayContaining([expect.stringMatching(/swagger-ui-bundle\.js$/), expect.stringMatching(/swagger-ui-init\.js$/)]));
    for (const script of scripts) {
      const asset = await fetch(new URL(script, `${service.url}/docs`)); // as a browser resolves it on /docs
      expect([script, asset.status, asset.headers.get('content-type')]).toEqual([script, 200, expect.stringMatching(/javascript/)]);
      if (script.endsWith('swagger-ui-init.js')) {
        const init = await asset.text();
        expect(init).toContain('"/v1/campaigns"');
        expect(init).toContain(`"version": "${VERSION}"`);
      } else {
        await asset.arrayBuffer();
      }
    }
  });

  it('answers another method on these paths with 405 in the envelope', async () => {
    const response = await fetch(`${service.url}/openapi.json`, { method: 'POST' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET');
    expect(await response.json()).toMatchObject({ success: false, error: { code: 'method_not_allowed' } });
  });
});
