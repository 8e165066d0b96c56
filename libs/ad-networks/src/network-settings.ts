import { CHANNELS, Channel } from '@campaign-ops/channels';
import { NetworkSettings } from './ad-network.port';

/**
 * A bad network setting, named by its variable. The ad networks read their own slice of the
 * environment, so they keep their own error rather than depend on service-runtime's config; the
 * name and message are the ones service-runtime's ConfigError gives, so start-up reads the same.
 */
export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

/**
 * Where each network lives when nothing overrides it: API origin (each channel adds its own
 * versioned paths), consent page and token endpoint. Versions that appear here (Meta's) are the
 * same ones the channel's file uses for its API paths.
 */
export const DEFAULT_ENDPOINTS: Record<Channel, { apiUrl: string; oauthUrl: string; tokenUrl: string }> = {
  google_ads: {
    apiUrl: 'https://googleads.googleapis.com',
    oauthUrl: 'https://accounts.google.com/o/oauth2/v2/auth',
    tokenUrl: 'https://oauth2.googleapis.com/token',
  },
  meta_ads: {
    apiUrl: 'https://graph.facebook.com',
    oauthUrl: 'https://www.facebook.com/v24.0/dialog/oauth',
    tokenUrl: 'https://graph.facebook.com/v24.0/oauth/access_token',
  },
  tiktok_ads: {
    apiUrl: 'https://business-api.tiktok.com',
    oauthUrl: 'https://business-api.tiktok.com/portal/auth',
    tokenUrl: 'https://business-api.tiktok.com/open_api/v1.3/oauth2/access_token/',
  },
  linkedin_ads: {
    apiUrl: 'https://api.linkedin.com',
    oauthUrl: 'https://www.linkedin.com/oauth/v2/authorization',
    tokenUrl: 'https://www.linkedin.com/oauth/v2/accessToken',
  },
  microsoft_ads: {
    // Campaign Management lives here; Customer Management on the matching `clientcenter.` host.
    apiUrl: 'https://campaign.api.bingads.microsoft.com',
    oauthUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
    tokenUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/token',
  },
  snapchat_ads: {
    apiUrl: 'https://adsapi.snapchat.com',
    oauthUrl: 'https://accounts.snapchat.com/login/oauth2/authorize',
    tokenUrl: 'https://accounts.snapchat.com/login/oauth2/access_token',
  },
  pinterest_ads: {
    apiUrl: 'https://api.pinterest.com',
    oauthUrl: 'https://www.pinterest.com/oauth/',
    tokenUrl: 'https://api.pinterest.com/v5/oauth/token',
  },
  reddit_ads: {
    apiUrl: 'https://ads-api.reddit.com',
    oauthUrl: 'https://www.reddit.com/api/v1/authorize',
    tokenUrl: 'https://www.reddit.com/api/v1/access_token',
  },
  x_ads: {
    apiUrl: 'https://ads-api.x.com',
    oauthUrl: 'https://api.x.com/oauth/authorize',
    tokenUrl: 'https://api.x.com/oauth/access_token',
  },
  amazon_ads: {
    apiUrl: 'https://advertising-api.amazon.com',
    oauthUrl: 'https://www.amazon.com/ap/oa',
    tokenUrl: 'https://api.amazon.com/auth/o2/token',
  },
};

/** Networks that want a developer token beside the OAuth token on every call. */
const DEVELOPER_TOKEN_CHANNELS: readonly Channel[] = ['google_ads', 'microsoft_ads'];

type Env = Record<string, string | undefined>;

/** `CHANNEL_<CHANNEL>_*` for every channel (docs/api.md#connections-and-oauth), read and checked once at start-up. */
export function loadNetworkSettings(env: Env): Record<Channel, NetworkSettings> {
  const allowHttp = flag(env, 'CHANNEL_ALLOW_HTTP');
  const timeoutMs = wholeNumber(env, 'CHANNEL_TIMEOUT_MS', 30_000, 1, 600_000);
  const entries = CHANNELS.map((channel): [Channel, NetworkSettings] => {
    const prefix = `CHANNEL_${channel.toUpperCase()}`;
    const defaults = DEFAULT_ENDPOINTS[channel];
    return [
      channel,
      {
        channel,
        apiUrl: providerUrl(env, `${prefix}_API_URL`, defaults.apiUrl, allowHttp).replace(/\/+$/, ''),
        oauthUrl: providerUrl(env, `${prefix}_OAUTH_URL`, defaults.oauthUrl, allowHttp),
        tokenUrl: providerUrl(env, `${prefix}_TOKEN_URL`, defaults.tokenUrl, allowHttp),
        clientId: text(env, `${prefix}_CLIENT_ID`),
        clientSecret: text(env, `${prefix}_CLIENT_SECRET`),
        developerToken: DEVELOPER_TOKEN_CHANNELS.includes(channel) ? text(env, `${prefix}_DEVELOPER_TOKEN`) : null,
        timeoutMs,
      },
    ];
  });
  return Object.fromEntries(entries) as Record<Channel, NetworkSettings>;
}

function text(env: Env, name: string): string | null {
  const raw = env[name]?.trim();
  return raw ? raw : null;
}

function flag(env: Env, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return false;
  if (/^(true|1|yes)$/i.test(raw)) return true;
  if (/^(false|0|no)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be true or false, not "${raw}"`);
}

function wholeNumber(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new ConfigError(name, `must be a whole number from ${min} to ${max}, not "${raw}"`);
  return Number(raw);
}

function providerUrl(env: Env, name: string, fallback: string, allowHttp: boolean): string {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be a URL such as https://host/path, not "${raw}"`);
  }
  if (parsed.protocol !== 'https:' && !(allowHttp && parsed.protocol === 'http:'))
    throw new ConfigError(
      name,
      allowHttp
        ? `must use https:// or http://, not "${parsed.protocol}"`
        : `must use https:// (http:// only with CHANNEL_ALLOW_HTTP=true), not "${parsed.protocol}"`,
    );
  if (parsed.username || parsed.password) throw new ConfigError(name, 'must not carry credentials in the URL');
  return raw;
}
