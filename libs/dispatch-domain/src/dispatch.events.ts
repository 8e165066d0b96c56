import { DomainEvent, eventVersions } from '@campaign-ops/decider';
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

/**
 * Each type's upcasters from its older versions, oldest first (README, "Event versioning"). All are
 * at version 1: DispatchRetried gained its optional `connectionId` (fdd9ad7) without a new version,
 * since every older event still reads as the current shape.
 */
export const DISPATCH_EVENTS = eventVersions<DispatchEvent>('dispatch', {
  DispatchAccepted: [],
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
