/**
 * The proxy cannot start with what its configuration names (a port taken or not allowed, a file it
 * cannot write): refused before it serves anything, naming the key and the value.
 */
export class StartRefused extends Error {
  override readonly name = 'StartRefused';
  constructor(
    readonly key: string,
    readonly value: string,
    readonly code: string | null,
    problem: string,
  ) {
    super(`Cannot start: ${key} (${value}) ${problem}`);
  }
}
