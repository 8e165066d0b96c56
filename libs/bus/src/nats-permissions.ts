/**
 * What a NatsBus needs of the server, as NATS authorization: one user per service, allowed the
 * subjects it serves, calls, publishes and consumes, and nothing else. `renderNatsAuthorization`
 * writes the `authorization {}` block that k8s/datastores/nats-auth.conf holds (its spec checks
 * the file is exactly what this renders from the services' declared bus access).
 *
 * The subjects below are those nats.js 2.29 and nats-server 2.10 use for each bus operation:
 * - every connection: `$JS.API.INFO` (JetStream's presence), its own inbox `_INBOX.<user>.>`
 *   (replies, JetStream acks and pulled messages come there: `inboxPrefix`), the streams' info;
 * - publish: the subject (a JetStream publish is a request to it, the ack comes to the inbox);
 * - respond: subscribe to the subject (queue group = subject), replies through `allow_responses`,
 *   so no service may publish to another's inbox;
 * - consume: the durable's consumer API (`CONSUMER.INFO|CREATE|DURABLE.CREATE`, `MSG.NEXT`), its
 *   acks (`$JS.ACK.<stream>.<durable>.>`), its max-deliveries advisory, reading the message that
 *   advisory names (`STREAM.MSG.GET`) and parking it (`parked.<durable>`);
 * - managing the streams (create, update) and the parked list (get, delete, replay): the operators'
 *   user only (`ops bus setup`, `ops bus parked|replay`). A service allowed to change a stream's
 *   subjects could make it capture any other service's inbox.
 */
export const NATS_INBOX_ROOT = '_INBOX';
export const DEFAULT_STREAM_NAME = 'CAMPAIGN_OPS_EVENTS';
export const PARKED_STREAM_SUFFIX = '_PARKED';
export const PARKED_SUBJECT_ROOT = 'parked';

/** A service's use of the bus, as its code declares it. */
export interface BusAccess {
  /** Request subjects it answers. */
  serves: readonly string[];
  /** Request subjects it sends. */
  requests: readonly string[];
  /** Event subjects (under `evt.`) it publishes. */
  publishes: readonly string[];
  /** Durable consumers it reads through. */
  consumes: ReadonlyArray<{ durable: string; subject: string }>;
}

export interface NatsPermissions {
  publish: string[];
  subscribe: string[];
  /** Replies to the requests it received, and only those. */
  allowResponses: boolean;
}

/** The inbox every reply to a user's requests comes to: nobody else may subscribe to it. */
export const inboxPrefixOf = (user: string): string => `${NATS_INBOX_ROOT}.${user}`;

export function servicePermissions(user: string, access: BusAccess, streamName = DEFAULT_STREAM_NAME): NatsPermissions {
  const parkedStream = `${streamName}${PARKED_STREAM_SUFFIX}`;
  const publish = ['$JS.API.INFO', `$JS.API.STREAM.INFO.${streamName}`, `$JS.API.STREAM.INFO.${parkedStream}`, ...access.requests, ...access.publishes];
  const subscribe = [`${inboxPrefixOf(user)}.>`, ...access.serves];
  if (access.consumes.length > 0) publish.push(`$JS.API.STREAM.MSG.GET.${streamName}`);
  for (const { durable } of access.consumes) {
    publish.push(
      `$JS.API.CONSUMER.INFO.${streamName}.${durable}`,
      `$JS.API.CONSUMER.CREATE.${streamName}.${durable}`,
      `$JS.API.CONSUMER.CREATE.${streamName}.${durable}.>`,
      `$JS.API.CONSUMER.DURABLE.CREATE.${streamName}.${durable}`,
      `$JS.API.CONSUMER.MSG.NEXT.${streamName}.${durable}`,
      `$JS.ACK.${streamName}.${durable}.>`,
      `${PARKED_SUBJECT_ROOT}.${durable}`,
    );
    subscribe.push(`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${streamName}.${durable}`);
  }
  return { publish: unique(publish), subscribe: unique(subscribe), allowResponses: access.serves.length > 0 };
}

/** The operators' user (ops-cli): sets the streams up, lists and replays parked messages. No service's requests. */
export function operatorPermissions(user: string): NatsPermissions {
  return { publish: ['$JS.API.>', 'evt.>', `${PARKED_SUBJECT_ROOT}.>`], subscribe: [`${inboxPrefixOf(user)}.>`], allowResponses: false };
}

export interface NatsUser {
  user: string;
  /** The environment variable nats-server reads the password from (`$NAME` in the file). */
  passwordVariable: string;
  permissions: NatsPermissions;
}

/** `NATS_PASSWORD_API_GATEWAY` for `api-gateway`. */
export const passwordVariableOf = (user: string): string => `NATS_PASSWORD_${user.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;

/** The `authorization {}` block of nats-server's configuration. */
export function renderNatsAuthorization(users: NatsUser[], header: string[]): string {
  const list = (subjects: string[]) => ['[', ...subjects.map((subject) => `          ${JSON.stringify(subject)}`), '        ]'].join('\n');
  const blocks = users.map(({ user, passwordVariable, permissions }) =>
    [
      '    {',
      `      user: ${JSON.stringify(user)}`,
      `      password: $${passwordVariable}`,
      '      permissions: {',
      `        publish: ${list(permissions.publish)}`,
      `        subscribe: ${list(permissions.subscribe)}`,
      ...(permissions.allowResponses ? ['        allow_responses: true'] : []),
      '      }',
      '    }',
    ].join('\n'),
  );
  return [...header.map((line) => `# ${line}`.trimEnd()), 'authorization {', '  users: [', blocks.join('\n'), '  ]', '}', ''].join('\n');
}

function unique(subjects: string[]): string[] {
  return [...new Set(subjects)];
}
