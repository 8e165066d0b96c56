import { Type } from 'class-transformer';
import { IsIn, IsInt, IsObject, IsString, Max, MaxLength, Min, MinLength, ValidateBy, ValidateNested } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { BUDGET_TYPES, BudgetType, CampaignSpec, Channel, CHANNELS, OBJECTIVES } from '@campaign-ops/channels';
import { IsAfter, IsCurrencyCode, IsTimeZone, IsUtcTimestamp, Omittable, RuleContext } from './rules';

export class BudgetDto {
  @JSONSchema({ description: 'Amount in millionths of the currency unit.', examples: [50_000_000] })
  @IsInt()
  @Min(1)
  @Max(Number.MAX_SAFE_INTEGER)
  amount_micros!: number;

  @JSONSchema({ examples: ['USD'] })
  @IsCurrencyCode()
  currency!: string;

  @JSONSchema({ examples: ['daily'] })
  @IsIn(BUDGET_TYPES)
  type!: BudgetType;
}

export class ScheduleDto {
  @JSONSchema({ examples: ['2026-12-01T09:00:00Z'] })
  @IsUtcTimestamp()
  start_at!: string;

  @JSONSchema({ description: 'IANA time zone name.', examples: ['Europe/Berlin'] })
  @IsString()
  @MaxLength(64)
  @IsTimeZone()
  timezone!: string;

  @JSONSchema({
    description:
      'After start_at (not expressed in this schema: a request whose end_at is not later is answered 400 parameter_invalid); required with a lifetime budget.',
  })
  @Omittable()
  @IsUtcTimestamp()
  @IsAfter('start_at')
  end_at?: string;
}

/** A lifetime budget needs the schedule's end (said of `schedule.end_at`, once the schedule itself is fine). */
const EndsWithLifetimeBudget = () =>
  ValidateBy(
    {
      name: 'endsWithLifetimeBudget',
      validator: {
        validate: (schedule: ScheduleDto | null, args) => (args?.object as CampaignDto).budget?.type !== 'lifetime' || schedule?.end_at !== undefined,
        defaultMessage: () => 'is required with a lifetime budget',
      },
    },
    { context: { code: 'parameter_missing', at: 'end_at', afterFields: true } satisfies RuleContext },
  );

/** The document says what EndsWithLifetimeBudget checks. */
@JSONSchema({
  if: { required: ['budget'], properties: { budget: { type: 'object', required: ['type'], properties: { type: { const: 'lifetime' } } } } },
  then: { properties: { schedule: { properties: { end_at: {} }, required: ['end_at'] } } },
} as Parameters<typeof JSONSchema>[0])
export class CampaignDto implements CampaignSpec {
  @JSONSchema({
    description: 'Campaign name. Sandbox magic names: `[sandbox:fail]`, `[sandbox:transient]`, `[sandbox:reauth]`, `[sandbox:slow]`.',
    examples: ['Spring sale'],
  })
  @IsString()
  @MinLength(1)
  @MaxLength(255)
  name!: string;

  @JSONSchema({ examples: ['conversion'] })
  @IsIn(OBJECTIVES)
  objective!: string;

  @IsObject()
  @ValidateNested()
  @Type(() => BudgetDto)
  budget!: BudgetDto;

  @IsObject()
  @ValidateNested()
  @Type(() => ScheduleDto)
  @EndsWithLifetimeBudget()
  schedule!: ScheduleDto;
}

/** POST /v1/campaigns. */
export class CreateCampaignDto {
  @JSONSchema({ examples: ['meta_ads'] })
  @IsIn(CHANNELS)
  channel!: Channel;

  @IsObject()
  @ValidateNested()
  @Type(() => CampaignDto)
  campaign!: CampaignDto;
}
