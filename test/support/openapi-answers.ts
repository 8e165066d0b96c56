import Ajv2020, { ErrorObject, ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/**
 * Every answer checked against the OpenAPI document the server serves: the operation found by
 * method and path template, the schema of its status and content type (success and error
 * envelopes alike), ajv 2020-12 as OpenAPI 3.1 uses. An answer whose status the operation does
 * not declare, or whose body does not match, is a failure with the operation, status and ajv's
 * errors in words.
 */
export type AnswerValidator = (method: string, url: string, status: number, contentType: string | null, body: unknown) => string | undefined;

type Document = { paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> }>> };

const DOCUMENT_ID = 'urn:campaign-ops:openapi';
const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);
const escapePointer = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

/** `/v1/dispatches/{id}` → a matcher of concrete paths; literal segments first (so `/v1/campaigns/validate` is not `{id}`). */
function templates(document: Document): { template: string; pattern: RegExp; params: number }[] {
  return Object.keys(document.paths)
    .map((template) => ({
      template,
      pattern: new RegExp('^' + template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+') + '$'),
      params: (template.match(/\{/g) ?? []).length,
    }))
    .sort((a, b) => a.params - b.params);
}

export function answerValidator(document: unknown): AnswerValidator {
  const doc = document as Document;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema(doc as object, DOCUMENT_ID);
  const compiled = new Map<string, ValidateFunction>();
  const schemaAt = (pointer: string): ValidateFunction => {
    let validate = compiled.get(pointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}` });
      compiled.set(pointer, validate);
    }
    return validate;
  };
  const matchers = templates(doc);
  const errorSchema = schemaAt('/components/schemas/Error');

  return (method, url, status, contentType, body) => {
    const path = new URL(url, 'http://answer.invalid').pathname;
    const verb = method.toLowerCase();
    const found = matchers.find(({ template, pattern }) => pattern.test(path) && HTTP_METHODS.has(verb) && doc.paths[template][verb]);
    if (!found) {
      // Not an operation of the document (an unknown route or method): only an error can answer it.
      if (status < 400) return `${method.toUpperCase()} ${path} is not an operation of /openapi.json, yet it answered ${status}`;
      return errorSchema(body)
        ? undefined
        : `${method.toUpperCase()} ${path} (no such operation) answered ${status} with a body that is not the error envelope:\n${describe(errorSchema.errors, body)}`;
    }
    const operation = `${method.toUpperCase()} ${found.template}`;
    const responses = doc.paths[found.template][verb].responses ?? {};
    const declared = responses[String(status)] ? String(status) : responses.default ? 'default' : undefined;
    if (!declared) return `${operation} answered ${status}, which the document does not declare for it (declared: ${Object.keys(responses).join(', ')})`;
    const media = (contentType ?? '').split(';')[0].trim().toLowerCase();
    const content = responses[declared].content ?? {};
    if (!content[media]?.schema)
      return `${operation} answered ${status} as ${media || 'no content type'}, which the document does not declare (declared: ${Object.keys(content).join(', ') || 'none'})`;
    const validate = schemaAt(`/paths/${escapePointer(found.template)}/${verb}/responses/${declared}/content/${escapePointer(media)}/schema`);
    return validate(body) ? undefined : `${operation} answered ${status} with a body that does not match the document:\n${describe(validate.errors, body)}`;
  };
}

function describe(errors: ErrorObject[] | null | undefined, body: unknown): string {
  const lines = (errors ?? []).map(
    (error) =>
      `  ${error.instancePath || '(body)'} ${error.message}${error.params && Object.keys(error.params).length ? ' ' + JSON.stringify(error.params) : ''}`,
  );
  return [...lines, `  body: ${JSON.stringify(body).slice(0, 1000)}`].join('\n');
}

const validators = new Map<string, Promise<AnswerValidator>>();

/** The validator of the server at `baseUrl`, its /openapi.json fetched once. */
export function answerValidatorOf(baseUrl: string): Promise<AnswerValidator> {
  let validator = validators.get(baseUrl);
  if (!validator) {
    validator = fetch(`${baseUrl}/openapi.json`).then(async (response) => {
      if (response.status !== 200) throw new Error(`GET ${baseUrl}/openapi.json answered ${response.status}: the answers cannot be checked`);
      return answerValidator(await response.json());
    });
    validator.catch(() => validators.delete(baseUrl));
    validators.set(baseUrl, validator);
  }
  return validator;
}

/** Throws when the answer does not match the document of the server at `baseUrl`. */
export async function assertAnswerMatchesDocument(
  baseUrl: string,
  method: string,
  url: string,
  status: number,
  contentType: string | null,
  body: unknown,
): Promise<void> {
  const problem = (await answerValidatorOf(baseUrl))(method, url, status, contentType, body);
  if (problem) throw new Error(`The answer does not match /openapi.json: ${problem}`);
}
