import { CHANNELS } from '@campaign-ops/channels';
import { ConfigError, DEFAULT_ENDPOINTS, loadNetworkSettings } from './network-settings';

describe('loadNetworkSettings', () => {
  it('gives every channel the real hosts, no client, a 30 s timeout, when nothing is set', () => {
    const settings = loadNetworkSettings({});
    expect(Object.keys(settings).sort()).toEqual([...CHANNELS].sort());
    expect(settings.google_ads).toEqual({
      channel: 'google_ads',
      apiUrl: 'https://googleads.googleapis.com',
      oauthUrl: 'https://accounts.google.com/o/oauth2/v2/auth',
      tokenUrl: 'https://oauth2.googleapis.com/token',
      clientId: null,
      clientSecret: null,
      developerToken: null,
      timeoutMs: 30_000,
    });
    for (const channel of CHANNELS) {
      expect(settings[channel]).toMatchObject({ channel, ...DEFAULT_ENDPOINTS[channel], timeoutMs: 30_000 });
      for (const url of [settings[channel].apiUrl, settings[channel].oauthUrl, settings[channel].tokenUrl]) expect(url).toMatch(/^https:\/\//);
    }
  });

  it('reads CHANNEL_<CHANNEL>_* per channel, trims the API URL, and the developer tokens of Google and Microsoft only', () => {
    const settings = loadNetworkSettings({
      CHANNEL_META_ADS_API_URL: 'https://graph.example/',
      CHANNEL_META_ADS_OAUTH_URL: 'https://www.example/v24.0/dialog/oauth',
      CHANNEL_META_ADS_TOKEN_URL: 'https://graph.example/v24.0/oauth/access_token',
      CHANNEL_META_ADS_CLIENT_ID: ' app-1 ',
      CHANNEL_META_ADS_CLIENT_SECRET: 'shh',
      CHANNEL_GOOGLE_ADS_DEVELOPER_TOKEN: 'dev-g',
      CHANNEL_MICROSOFT_ADS_DEVELOPER_TOKEN: 'dev-m',
      CHANNEL_TIKTOK_ADS_DEVELOPER_TOKEN: 'ignored',
      CHANNEL_TIMEOUT_MS: '2500',
    });
    expect(settings.meta_ads).toEqual({
      channel: 'meta_ads',
      apiUrl: 'https://graph.example',
      oauthUrl: 'https://www.example/v24.0/dialog/oauth',
      tokenUrl: 'https://graph.example/v24.0/oauth/access_token',
      clientId: 'app-1',
      clientSecret: 'shh',
      developerToken: null,
      timeoutMs: 2500,
    });
    expect(settings.google_ads.developerToken).toBe('dev-g');
    expect(settings.microsoft_ads.developerToken).toBe('dev-m');
    expect(settings.tiktok_ads.developerToken).toBeNull();
    expect(settings.google_ads.timeoutMs).toBe(2500);
  });

  it('refuses http:// unless CHANNEL_ALLOW_HTTP=true, naming the variable', () => {
    const run = () => loadNetworkSettings({ CHANNEL_TIKTOK_ADS_API_URL: 'http://127.0.0.1:9000' });
    expect(run).toThrow(ConfigError);
    expect(run).toThrow(/^CHANNEL_TIKTOK_ADS_API_URL must use https:\/\//);
    expect(loadNetworkSettings({ CHANNEL_TIKTOK_ADS_API_URL: 'http://127.0.0.1:9000', CHANNEL_ALLOW_HTTP: 'true' }).tiktok_ads.apiUrl).toBe(
      'http://127.0.0.1:9000',
    );
  });

  it.each([
    [{ CHANNEL_GOOGLE_ADS_TOKEN_URL: 'not a url' }, /^CHANNEL_GOOGLE_ADS_TOKEN_URL must be a URL/],
    [
      { CHANNEL_GOOGLE_ADS_OAUTH_URL: 'ftp://accounts.example/auth', CHANNEL_ALLOW_HTTP: 'true' },
      /^CHANNEL_GOOGLE_ADS_OAUTH_URL must use https:\/\/ or http:\/\//,
    ],
    [{ CHANNEL_LINKEDIN_ADS_API_URL: 'https://user:pw@api.example' }, /^CHANNEL_LINKEDIN_ADS_API_URL must not carry credentials/],
    [{ CHANNEL_ALLOW_HTTP: 'maybe' }, /^CHANNEL_ALLOW_HTTP must be true or false/],
    [{ CHANNEL_TIMEOUT_MS: '0' }, /^CHANNEL_TIMEOUT_MS must be a whole number/],
    [{ CHANNEL_TIMEOUT_MS: '30s' }, /^CHANNEL_TIMEOUT_MS must be a whole number/],
  ])('refuses %j, naming the variable', (env, message) => {
    expect(() => loadNetworkSettings(env)).toThrow(ConfigError);
    expect(() => loadNetworkSettings(env)).toThrow(message);
  });
});
