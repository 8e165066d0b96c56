import { ProviderError } from '@campaign-ops/channels';

/** The ProviderError a call was refused with (the test fails if it resolved, or threw anything else). */
export async function rejection(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}
