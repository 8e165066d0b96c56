/**
 * Every route the gateway serves, so an unknown path answers 404 `route_not_found` and a known
 * path with another method answers 405 `method_not_allowed` (with `Allow`).
 */
export const ROUTES: ReadonlyArray<{ method: string; path: string }> = [
  { method: 'POST', path: '/v1/campaigns' },
  { method: 'GET', path: '/v1/dispatches' },
  { method: 'GET', path: '/v1/dispatches/:id' },
  { method: 'POST', path: '/v1/dispatches/:id/retry' },
  { method: 'GET', path: '/v1/dispatches/:id/events' },
  { method: 'POST', path: '/v1/webhooks' },
  { method: 'GET', path: '/v1/webhooks' },
  { method: 'GET', path: '/v1/webhooks/:id' },
  { method: 'PATCH', path: '/v1/webhooks/:id' },
  { method: 'DELETE', path: '/v1/webhooks/:id' },
  { method: 'POST', path: '/v1/webhooks/:id/rotate-secret' },
  { method: 'GET', path: '/v1/webhooks/:id/deliveries' },
  { method: 'POST', path: '/v1/webhooks/:id/deliveries/:delivery_id/redeliver' },
  { method: 'GET', path: '/v1/account' },
  { method: 'POST', path: '/admin/v1/accounts' },
  { method: 'POST', path: '/admin/v1/accounts/:id/keys' },
  { method: 'POST', path: '/admin/v1/accounts/:id/credits' },
  { method: 'DELETE', path: '/admin/v1/keys/:id' },
  { method: 'GET', path: '/healthz' },
  { method: 'GET', path: '/readyz' },
];

const matches = (pattern: string, path: string): boolean => {
  const a = pattern.split('/');
  const b = path.replace(/\/+$/, '').split('/');
  return a.length === b.length && a.every((segment, i) => segment.startsWith(':') ? b[i] !== '' : segment === b[i]);
};

/** The methods a path allows, empty when no route has this path. */
export const allowedMethods = (path: string): string[] => ROUTES.filter((r) => matches(r.path, path)).map((r) => r.method);
