export * from './rules';
export * from './time-zones';
export * from './create-campaign.dto';
export * from './webhook.dto';
export * from './admin.dto';
export * from './list-query.dto';
export * from './connection.dto';
export * from './responses';
