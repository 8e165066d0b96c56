import { INestApplication, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { InfrastructureModule, ServiceConfig } from '@campaign-ops/service-runtime';
import { answerValidator, AnswerValidator } from './openapi-answers';
import { GatewayModule } from '../../libs/gateway/src/gateway.module';
import { buildOpenApiDocument } from '../../libs/gateway/src/openapi/openapi.document';

/** The document describes exactly what the server answers: an undeclared field, or a missing one, is caught. */
const CONTROLLERS = [
  ...(Reflect.getMetadata('controllers', GatewayModule) as Function[]),
  ...(InfrastructureModule.forRoot({} as ServiceConfig).controllers ?? []),
];

let app: INestApplication;
let validate: AnswerValidator;

beforeAll(async () => {
  const moduleRef = await Test.createTestingModule({ controllers: CONTROLLERS as Type[] })
    .useMocker(() => ({}))
    .compile();
  app = moduleRef.createNestApplication({ logger: false });
  validate = answerValidator(JSON.parse(JSON.stringify(buildOpenApiDocument(app, '0.0.0'))));
});
afterAll(() => app?.close());

const dispatch = {
  id: 'dsp_01JBZ8KQ4T7W3X9M2N5P6R8S0V',
  status: 'failed',
  channel: 'meta_ads',
  resource_type: 'campaign',
  action: 'create',
  environment: 'sandbox',
  credits_charged: 1,
  campaign: {
    name: 'Spring sale',
    objective: 'conversion',
    budget: { amount_micros: 50_000_000, currency: 'USD', type: 'daily' },
    schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'Europe/Berlin' },
  },
  connection_id: null,
  provider_resource_id: null,
  error: { code: 'provider_validation_failed', message: 'Budget too low', provider_code: null, retryable: false },
  attempts: 1,
  idempotency_key: null,
  created_at: '2026-12-01T09:00:00.000Z',
  updated_at: '2026-12-01T09:00:01.000Z',
  completed_at: null,
  failed_at: '2026-12-01T09:00:01.000Z',
};
const answer = (data: unknown) => ({ success: true, data, request_id: 'req_01JBZ8KQ4T7W3X9M2N5P6R8S0V' });
const getDispatch = (body: unknown, status = 200) =>
  validate('GET', '/v1/dispatches/dsp_01JBZ8KQ4T7W3X9M2N5P6R8S0V', status, 'application/json; charset=utf-8', body);

describe('answers validated against the document', () => {
  it('passes a dispatch as the server answers it', () => {
    expect(getDispatch(answer(dispatch))).toBeUndefined();
    expect(validate('GET', '/v1/dispatches?limit=2', 200, 'application/json', { ...answer([dispatch]), has_more: false })).toBeUndefined();
  });

  it('fails a dispatch with a field its schema does not declare', () => {
    expect(getDispatch(answer({ ...dispatch, internal_state: 'x' }))).toMatch(
      /GET \/v1\/dispatches\/\{id\}.*200[\s\S]*must NOT have additional properties[\s\S]*internal_state/,
    );
    expect(getDispatch(answer({ ...dispatch, error: { ...dispatch.error, stack: 'x' } }))).toMatch(/additional properties/);
    expect(getDispatch({ ...answer(dispatch), extra: true })).toMatch(/additional properties/);
  });

  it('fails a dispatch without a required field, or with a null where none is allowed', () => {
    const { failed_at: _, ...withoutFailedAt } = dispatch;
    expect(getDispatch(answer(withoutFailedAt))).toMatch(/must have required property 'failed_at'/);
    expect(getDispatch(answer({ ...dispatch, status: 'done' }))).toMatch(/must be equal to one of the allowed values/);
    expect(getDispatch(answer({ ...dispatch, created_at: null }))).toMatch(/\/data\/created_at must be string/);
  });

  it('checks errors against the error envelope, and fails a status the operation does not declare', () => {
    const notFound = { success: false, error: { type: 'invalid_request_error', code: 'resource_missing', message: 'No such dispatch.' }, request_id: 'req_1' };
    expect(getDispatch(notFound, 404)).toBeUndefined();
    expect(getDispatch({ ...notFound, error: { ...notFound.error, detail: 'x' } }, 404)).toMatch(/additional properties/);
    expect(getDispatch(notFound, 418)).toMatch(/answered 418, which the document does not declare/);
    expect(validate('GET', '/v1/nowhere', 404, 'application/json', { ...notFound, error: { ...notFound.error, code: 'route_not_found' } })).toBeUndefined();
  });
});

describe('timestamps (docs/api.md#errors: UTC with milliseconds and Z)', () => {
  it('fails a timestamp without milliseconds or in another zone', () => {
    expect(getDispatch(answer({ ...dispatch, created_at: '2026-12-01T09:00:00Z' }))).toMatch(/\/data\/created_at must match pattern/);
    expect(getDispatch(answer({ ...dispatch, failed_at: '2026-12-01T10:00:01.000+01:00' }))).toMatch(/\/data\/failed_at must match pattern/);
  });
});
