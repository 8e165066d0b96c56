import { IsIn, IsString, Matches } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { CHANNELS } from '@campaign-ops/channels';
import { WEBHOOK_EVENT_TYPES } from '@campaign-ops/webhook-domain';
import { IsUtcTimestamp, Omittable } from './rules';

/** `limit` and `starting_after` of every paginated list (query values are strings, given once). */
export class ListQueryDto {
  @JSONSchema({ description: 'Page size, 1 to 100; default 20.' })
  @Omittable()
  @IsString()
  @Matches(/^(?:[1-9]\d?|100)$/, { message: 'must be a whole number from 1 to 100' })
  limit?: string;

  @JSONSchema({ description: 'The last id of the previous page.' })
  @Omittable()
  @IsString()
  @Matches(/^[a-z]+_[0-9A-Za-z]+$/, { message: 'must be an id from a previous page' })
  starting_after?: string;
}

/** GET /v1/dispatches. */
export class ListDispatchesQueryDto extends ListQueryDto {
  @JSONSchema({ description: 'Only dispatches in this status.' })
  @Omittable()
  @IsString()
  @IsIn(['accepted', 'completed', 'failed'])
  status?: 'accepted' | 'completed' | 'failed';

  @JSONSchema({ description: 'Only dispatches to this channel.' })
  @Omittable()
  @IsString()
  @IsIn(CHANNELS)
  channel?: string;
}

/** GET /v1/events. */
export class ListEventsQueryDto extends ListQueryDto {
  @JSONSchema({ description: 'Only events of this name.' })
  @Omittable()
  @IsString()
  @IsIn(WEBHOOK_EVENT_TYPES)
  type?: string;

  @JSONSchema({ description: 'Only events after this instant (ISO 8601 UTC).', format: 'date-time' })
  @Omittable()
  @IsString()
  @IsUtcTimestamp()
  created_after?: string;
}
