export * from './campaign.schema';
export * from './webhook.schema';
export * from './admin.schema';
