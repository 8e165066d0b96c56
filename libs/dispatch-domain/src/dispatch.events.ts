import { DomainEvent } from '@campaign-ops/decider';
import { CampaignSpec, Channel } from '@campaign-ops/channels';

export type Mode = 'live' | 'test';

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
/** A transient provider error; the dispatch stays accepted and tries again. */
export type DispatchAttemptFailed = DomainEvent<'DispatchAttemptFailed', { attempt: number; error: DispatchError; at: string }>;
export type DispatchCompleted = DomainEvent<'DispatchCompleted', { providerResourceId: string; attempt: number; completedAt: string }>;
export type DispatchFailed = DomainEvent<'DispatchFailed', { error: DispatchError; attempt: number; failedAt: string }>;
/** `connectionId`, when present: the live connection the new run uses (the one the dispatch had was replaced). */
export type DispatchRetried = DomainEvent<'DispatchRetried', { retriedAt: string; requestId: string | null; connectionId?: string }>;

export type DispatchEvent = DispatchAccepted | DispatchAttemptFailed | DispatchCompleted | DispatchFailed | DispatchRetried;

export const DISPATCH_EVENT_TYPES: ReadonlyArray<DispatchEvent['type']> = [
  'DispatchAccepted',
  'DispatchAttemptFailed',
  'DispatchCompleted',
  'DispatchFailed',
  'DispatchRetried',
];

export const CURRENT_EVENT_VERSION = 1;

export const dispatchStreamId = (dispatchId: string): string => `dispatch-${dispatchId}`;
export const DISPATCH_STREAM_PREFIX = 'dispatch-';

/**
 * Turns a stored event back into a domain event. Every type is at version 1 today; a later
 * version adds a case here that upcasts the older shapes, so old streams always replay.
 */
export function upcastDispatchEvent(type: string, data: Record<string, unknown>, version: number): DispatchEvent {
  if (!(DISPATCH_EVENT_TYPES as readonly string[]).includes(type)) throw new Error(`unknown dispatch event type ${type}`);
  if (version !== CURRENT_EVENT_VERSION) throw new Error(`no upcaster for ${type} v${version}`);
  return { type, version, data } as DispatchEvent;
}
