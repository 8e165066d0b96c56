import { DomainEvent, eventVersions } from '@campaign-ops/decider';
import { CampaignSpec, Channel } from '@campaign-ops/channels';

export type { Mode } from '@campaign-ops/account-domain';
import type { Mode } from '@campaign-ops/account-domain';

/** Why a dispatch failed, as the API shows it. */
export interface DispatchError {
  code: 'provider_validation_failed' | 'connection_reauth_required' | 'provider_unavailable';
  message: string;
  provider_code: string | null;
  retryable: boolean;
}

export type DispatchAccepted = DomainEvent<
  'DispatchAccepted',
  {
    dispatchId: string;
    accountId: string;
    mode: Mode;
    channel: Channel;
    resourceType: 'campaign';
    action: 'create';
    campaign: CampaignSpec;
    connectionId: string | null;
    creditsCharged: number;
    idempotencyKey: string | null;
    acceptedAt: string;
  }
>;
/**
 * A live try is about to call the network: recorded before the call, so that a try whose outcome
 * is lost (the process died, the answer never came) is known to have been made. `lookup`: the try
 * first looks for the dispatch's campaign at the network, because an earlier try may have
 * created it (docs/api.md#dispatches-and-retries, "At most one campaign per dispatch").
 */
export type DispatchAttemptStarted = DomainEvent<'DispatchAttemptStarted', { attempt: number; lookup: boolean; at: string }>;
/**
 * A transient provider error; the dispatch stays accepted and tries again. `outcomeUnknown`
 * (present only when true): the network may have created the campaign anyway (a timeout, a dropped
 * connection, a 5xx to a create, a lookup that did not answer), so the next try looks first.
 */
export type DispatchAttemptFailed = DomainEvent<'DispatchAttemptFailed', { attempt: number; error: DispatchError; at: string; outcomeUnknown?: true }>;
/**
 * `reconciled` (present only when true): the campaign was found at the network by the dispatch's
 * marker, made by a try whose outcome was lost, and adopted instead of creating another.
 * `duplicateProviderResourceIds` and `warning`: the lookup found more than one campaign with the
 * marker; the oldest was adopted and the others are named here for the partner to remove.
 */
export type DispatchCompleted = DomainEvent<
  'DispatchCompleted',
  { providerResourceId: string; attempt: number; completedAt: string; reconciled?: true; duplicateProviderResourceIds?: string[]; warning?: string }
>;
/** `outcomeUnknown` as for DispatchAttemptFailed: a retry of this dispatch looks for the campaign before creating one. */
export type DispatchFailed = DomainEvent<'DispatchFailed', { error: DispatchError; attempt: number; failedAt: string; outcomeUnknown?: true }>;
/** `connectionId`, when present: the live connection the new run uses (the one the dispatch had was replaced). */
export type DispatchRetried = DomainEvent<'DispatchRetried', { retriedAt: string; requestId: string | null; connectionId?: string }>;

export type DispatchEvent = DispatchAccepted | DispatchAttemptStarted | DispatchAttemptFailed | DispatchCompleted | DispatchFailed | DispatchRetried;

/**
 * Each type's upcasters from its older versions, oldest first (docs/architecture.md, "Event versioning"). All are
 * at version 1: DispatchRetried gained its optional `connectionId` (fdd9ad7), DispatchCompleted its
 * optional `reconciled` and duplicates, DispatchAttemptFailed and DispatchFailed their optional
 * `outcomeUnknown`, all without a new version, since every older event still reads as the current
 * shape.
 */
export const DISPATCH_EVENTS = eventVersions<DispatchEvent>('dispatch', {
  DispatchAccepted: [],
  DispatchAttemptStarted: [],
  DispatchAttemptFailed: [],
  DispatchCompleted: [],
  DispatchFailed: [],
  DispatchRetried: [],
});

export const DISPATCH_EVENT_TYPES: ReadonlyArray<DispatchEvent['type']> = DISPATCH_EVENTS.types;

export const dispatchStreamId = (dispatchId: string): string => `dispatch-${dispatchId}`;
export const DISPATCH_STREAM_PREFIX = 'dispatch-';

/** Turns a stored event back into a domain event, upcast to its type's current version. */
export const upcastDispatchEvent = DISPATCH_EVENTS.upcast;
