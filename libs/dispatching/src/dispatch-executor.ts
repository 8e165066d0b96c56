import { Inject, Injectable, Logger } from '@nestjs/common';
import { ChannelProvider, ProviderError } from '@campaign-ops/channels';
import { HandlerOutcome } from '@campaign-ops/bus';
import { DispatchCommand, DispatchError, DispatchNotInProgress, StaleAttempt, Dispatch } from '@campaign-ops/dispatch-domain';
import { dispatchesExecuting } from '@campaign-ops/service-runtime';
import { DispatchStore } from './dispatch-store';
import { RelayedEvent } from './dispatch-relay';

/** Which provider runs a dispatch: the simulator for test keys, a live adapter for live keys. */
export interface ChannelProviders {
  forDispatch(dispatch: Dispatch): ChannelProvider | null;
  liveChannelAvailable(channel: Dispatch['channel']): boolean;
}

export const CHANNEL_PROVIDERS = Symbol('CHANNEL_PROVIDERS');

/** Until live adapters exist: no channel runs live. */
export const NO_LIVE_CHANNELS: Pick<ChannelProviders, 'liveChannelAvailable'> = { liveChannelAvailable: () => false };

/** Waits between transient provider errors within one dispatch. */
export const attemptBackoffMs = (attempt: number): number => Math.min(30_000, 500 * 2 ** (attempt - 1));

/**
 * Runs accepted dispatches against their channel and records the outcome. It decides from the
 * stream, not from the message, so a redelivered or stale message does nothing twice.
 */
@Injectable()
export class DispatchExecutor {
  private readonly logger = new Logger('dispatch-executor');

  constructor(
    private readonly store: DispatchStore,
    @Inject(CHANNEL_PROVIDERS) private readonly providers: ChannelProviders,
  ) {}

  async handle(event: RelayedEvent): Promise<HandlerOutcome> {
    if (event.type !== 'DispatchAccepted' && event.type !== 'DispatchRetried') return;
    const { state } = await this.store.stateOf(event.streamId);
    if (state.status !== 'accepted') return;

    const attempt = state.attempts + 1;
    dispatchesExecuting.inc();
    const command = await this.callProvider(state, attempt).finally(() => dispatchesExecuting.dec());
    const metadata = { accountId: state.accountId, mode: state.mode, requestId: (event.metadata.requestId as string | undefined) ?? null };
    try {
      const decided = await this.store.repository.execute(event.streamId, command, metadata);
      await this.store.refreshView(event.streamId);
      const last = decided.recorded[decided.recorded.length - 1];
      // A transient failure: wait, then this message comes back and the next attempt runs.
      if (last?.type === 'DispatchAttemptFailed') return { retryInMs: attemptBackoffMs(attempt) };
    } catch (error) {
      // Another delivery of this work recorded the outcome first: nothing left to do.
      if (error instanceof StaleAttempt || error instanceof DispatchNotInProgress) return;
      throw error;
    }
  }

  private async callProvider(dispatch: Dispatch, attempt: number): Promise<DispatchCommand> {
    const now = () => new Date().toISOString();
    const provider = this.providers.forDispatch(dispatch);
    if (!provider) {
      const error: DispatchError = {
        code: 'provider_unavailable',
        message: `Live execution on ${dispatch.channel} is not available.`,
        provider_code: null,
        retryable: true,
      };
      return { type: 'RecordProviderFailure', attempt, error, now: now() };
    }
    try {
      const created = await provider.createCampaign({ dispatchId: dispatch.id, channel: dispatch.channel, campaign: dispatch.campaign, attempt });
      return { type: 'RecordProviderSuccess', attempt, providerResourceId: created.providerResourceId, now: now() };
    } catch (error) {
      return { type: 'RecordProviderFailure', attempt, error: this.toDispatchError(error), now: now() };
    }
  }

  private toDispatchError(error: unknown): DispatchError {
    if (error instanceof ProviderError) {
      switch (error.kind) {
        case 'validation':
          return { code: 'provider_validation_failed', message: error.message, provider_code: error.providerCode, retryable: false };
        case 'auth':
          return { code: 'connection_reauth_required', message: error.message, provider_code: error.providerCode, retryable: false };
        case 'transient':
          return { code: 'provider_unavailable', message: error.message, provider_code: error.providerCode, retryable: true };
      }
    }
    // Not a provider's answer (a network fault, a bug): treat as transient, and say so in the log.
    this.logger.warn(`provider call failed unexpectedly: ${(error as Error).message}`);
    return { code: 'provider_unavailable', message: 'The provider could not be reached.', provider_code: null, retryable: true };
  }
}
