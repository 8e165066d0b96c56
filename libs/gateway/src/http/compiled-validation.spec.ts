import { ArgumentMetadata } from '@nestjs/common';
import { Exclude, Expose, Transform, Type } from 'class-transformer';
import { IsInt, IsString, Validate, ValidateNested, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';
import { CreateCampaignDto, CreateWebhookDto } from '@campaign-ops/api-contract';
import { sandboxCampaign } from '../../../../test/support/partner-client';
import { ApiValidationPipe } from './api-validation.pipe';
import { Acceptor, compileAcceptor } from './compiled-validation';

/** The DTO's acceptor, which must compile. */
function acceptorOf(dto: Function): Acceptor {
  const compiled = compileAcceptor(dto as never);
  if (!('accepts' in compiled)) throw new Error(`${dto.name} does not compile: ${compiled.notCompilable}`);
  return compiled.accepts;
}

const pipe = new ApiValidationPipe();

async function pipeAccepts(value: unknown, metatype: Function): Promise<boolean> {
  try {
    await pipe.transform(value, { type: 'body', metatype: metatype as ArgumentMetadata['metatype'] });
    return true;
  } catch {
    return false;
  }
}

type Json = Record<string, unknown>;
const clone = <T>(value: T): T => structuredClone(value);

/** Every object's path in `value`, the root's included (as []). */
function objectPaths(value: unknown, path: string[] = []): string[][] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [];
  return [path, ...Object.entries(value).flatMap(([key, inner]) => objectPaths(inner, [...path, key]))];
}
const leafPaths = (value: unknown): string[][] =>
  objectPaths(value).flatMap((path) => Object.keys(path.reduce<Json>((at, key) => at[key] as Json, value as Json)).map((key) => [...path, key]));

const REPLACEMENTS: unknown[] = [
  undefined,
  null,
  0,
  1,
  -1,
  1.5,
  2 ** 53,
  '',
  'x',
  'x'.repeat(256),
  'USD',
  'usd',
  'daily',
  'lifetime',
  'conversion',
  'meta_ads',
  '2026-12-01T09:00:00Z',
  '2026-12-31T09:00:00Z',
  '2026-02-31T09:00:00Z',
  '2026-12-01T09:00:00+01:00',
  'Europe/Berlin',
  'Mars/Olympus',
  true,
  [],
  ['x'],
  {},
  { amount_micros: 1, currency: 'EUR', type: 'daily' },
];

/** The valid bodies given, and each with one field replaced, removed or added, at every depth. */
function corpus(valid: Json[]): unknown[] {
  const bodies: unknown[] = [undefined, null, 'a launch', 7, [], [valid[0]]];
  for (const body of valid) {
    bodies.push(body);
    for (const path of leafPaths(body)) {
      for (const replacement of REPLACEMENTS) {
        const edited = clone(body);
        const parent = path.slice(0, -1).reduce<Json>((at, key) => at[key] as Json, edited);
        if (replacement === undefined) delete parent[path.at(-1)!];
        else parent[path.at(-1)!] = clone(replacement);
        bodies.push(edited);
      }
    }
    for (const path of objectPaths(body)) {
      for (const extra of ['extra', 'end_at', 'name']) {
        const edited = clone(body);
        const at = path.reduce<Json>((object, key) => object[key] as Json, edited);
        if (extra in at) continue;
        at[extra] = '2027-01-01T00:00:00Z';
        bodies.push(edited);
      }
    }
  }
  return bodies;
}

describe('compileAcceptor: a DTO’s class-validator rules as one yes/no check', () => {
  const launch = sandboxCampaign() as unknown as Json;
  const lifetime = clone(launch) as { campaign: { budget: Json; schedule: Json } };
  lifetime.campaign.budget.type = 'lifetime';
  lifetime.campaign.schedule.end_at = '2026-12-31T09:00:00Z';

  it('says yes to exactly the launch bodies ApiValidationPipe accepts, at every depth of every field', async () => {
    const accepts = acceptorOf(CreateCampaignDto);
    const bodies = corpus([launch, lifetime as unknown as Json]);
    expect(bodies.length).toBeGreaterThan(500);
    let accepted = 0;
    for (const body of bodies) {
      const expected = await pipeAccepts(clone(body), CreateCampaignDto);
      if (accepts(body) !== expected)
        throw new Error(`acceptor ${!expected ? 'accepts' : 'refuses'} what the pipe ${expected ? 'accepts' : 'refuses'}: ${JSON.stringify(body)}`);
      if (expected) accepted++;
    }
    // Both kinds are in the corpus: the shortcut is taken, and refusals are many.
    expect(accepted).toBeGreaterThan(20);
    expect(bodies.length - accepted).toBeGreaterThan(400);
  });

  it('says why a DTO is not compilable, for each rule it does not model (no shortcut: the pipe judges)', () => {
    class Inner {
      @IsInt()
      n!: number;
    }
    class Transformed {
      @IsString()
      @Transform(({ value }) => String(value).trim())
      name!: string;
    }
    class Exposed {
      @Expose()
      @IsString()
      name!: string;
    }
    class Excluded {
      @IsString()
      name!: string;
      @Exclude()
      @IsString()
      secret!: string;
    }
    class Untyped {
      @ValidateNested()
      inner!: Inner;
    }
    class Grouped {
      @IsInt()
      n!: number;
      @IsInt({ groups: ['admin'] })
      m!: number;
    }
    class Always {
      @IsInt({ always: true })
      n!: number;
    }
    class Conditional {
      @IsInt({ validateIf: () => true })
      n!: number;
    }
    @ValidatorConstraint({ async: true })
    class Later implements ValidatorConstraintInterface {
      validate = async () => true;
    }
    class Async {
      @Validate(Later)
      n!: number;
    }
    class Loop {
      @ValidateNested()
      @Type(() => Loop)
      next?: Loop;
    }
    expect(
      [CreateWebhookDto, Transformed, Exposed, Excluded, Untyped, Grouped, Always, Conditional, Async, Loop, class Bare {}].map((dto) => compileAcceptor(dto)),
    ).toEqual([
      { notCompilable: 'CreateWebhookDto.events: customValidation' }, // each item a known event
      { notCompilable: 'Transformed.name is transformed' },
      { notCompilable: 'Exposed exposes or excludes fields' },
      { notCompilable: 'Excluded exposes or excludes fields' },
      { notCompilable: 'Untyped.inner is nested without @Type' },
      { notCompilable: 'Grouped.m: customValidation' },
      { notCompilable: 'Always.n: customValidation' },
      { notCompilable: 'Conditional.n: customValidation' },
      { notCompilable: 'Async.n: async Later' },
      { notCompilable: 'Loop nests itself' },
      { notCompilable: 'Bare has no rules' },
    ]);
  });

  it('lets an error that is not about the rules out (a @Type that throws)', () => {
    class Broken {
      @ValidateNested()
      @Type(() => {
        throw new Error('no such type');
      })
      inner!: object;
    }
    expect(() => compileAcceptor(Broken)).toThrow('no such type');
  });

  it('checks a nested field as its @Type, and an absent one not at all', () => {
    class Inner {
      @IsInt()
      n!: number;
    }
    class Typed {
      @ValidateNested()
      @Type(() => Inner)
      inner!: Inner;
    }
    const typed = acceptorOf(Typed);
    expect([typed({ inner: { n: 1 } }), typed({ inner: { n: 'x' } }), typed({ inner: [{ n: 1 }] }), typed({})]).toEqual([true, false, false, true]);
  });
});
