import { s } from '@campaign-ops/request-validation';

const MAX_CREDITS = 1_000_000_000;
const mode = s.string({ enum: ['live', 'test'] });

export const createAccountSchema = s.object(
  { name: s.string({ minLength: 1, maxLength: 255, example: 'Acme Media' }), credits: s.integer({ minimum: 0, maximum: MAX_CREDITS, description: 'Starting credits in each mode; default 1000.' }) },
  { required: ['name'] },
);
export const createKeySchema = s.object({ mode }, { required: ['mode'] });
export const grantCreditsSchema = s.object({ mode, amount: s.integer({ minimum: 1, maximum: MAX_CREDITS }) }, { required: ['mode', 'amount'] });
