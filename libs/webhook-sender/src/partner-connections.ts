import { createHash } from 'node:crypto';
import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import { Agent } from 'undici';
import { guardedLookup, type UrlPolicy } from '@campaign-ops/url-guard';

export type ConnectionLimits = {
  /** Connections open at once to one origin; more deliveries to it wait for one to be free. */
  connectionsPerOrigin: number;
  /** A connection idle this long is closed (a partner's shorter Keep-Alive hint wins). */
  idleTimeoutMs: number;
};

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = { connectionsPerOrigin: 16, idleTimeoutMs: 30_000 };

// Bound late, so the resolver underneath is whatever `dns.lookup` is at connect time (tests replace it).
const systemLookup: LookupFunction = (hostname, options, callback) => dns.lookup(hostname, options, callback);

/**
 * Keep-alive connections to partners: an undici Agent (one pool per origin) for each URL policy
 * and set of trust anchors, since both decide which connections may be made at all.
 *
 * Every new connection resolves its host through guardedLookup, so the addresses it is about to
 * connect to are judged before it is made, whatever connections the pool already holds; a
 * connection reused from the pool was judged when it was opened. An origin's pool goes away
 * once its last connection has idled out.
 */
export class PartnerConnections {
  private readonly agents = new Map<string, Agent>();

  constructor(private readonly limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS) {}

  for(policy: Pick<UrlPolicy, 'allowPrivateNetworks'>, ca?: string | Buffer): Agent {
    const key = `${policy.allowPrivateNetworks ? 'private' : 'public'}:${ca === undefined ? 'system' : createHash('sha256').update(ca).digest('hex')}`;
    let agent = this.agents.get(key);
    if (!agent) {
      agent = new Agent({
        connections: this.limits.connectionsPerOrigin,
        keepAliveTimeout: this.limits.idleTimeoutMs,
        keepAliveMaxTimeout: this.limits.idleTimeoutMs,
        connect: { lookup: guardedLookup(policy, systemLookup), ...(ca !== undefined ? { ca } : {}) },
      });
      this.agents.set(key, agent);
    }
    return agent;
  }

  /** Waits for requests under way, then closes every connection; later deliveries open new ones. */
  async close(): Promise<void> {
    const agents = [...this.agents.values()];
    this.agents.clear();
    await Promise.all(agents.map((agent) => agent.close()));
  }
}
