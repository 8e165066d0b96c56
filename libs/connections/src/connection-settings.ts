import { CONFIG, ConnectionSettings, ServiceConfig } from '@campaign-ops/service-runtime';

/** connection-service's part of the configuration (the vault's keys, PUBLIC_BASE_URL, the sweep). */
export const CONNECTION_SETTINGS = Symbol('CONNECTION_SETTINGS');
export type { ConnectionSettings };

export const connectionSettingsProvider = { provide: CONNECTION_SETTINGS, useFactory: (config: ServiceConfig) => config.connections, inject: [CONFIG] };

/** The service's own OAuth callback, the `redirect_uri` every network sees. */
export const oauthCallbackUrl = (settings: Pick<ConnectionSettings, 'publicBaseUrl'>) => `${settings.publicBaseUrl}/v1/connections/oauth/callback`;
