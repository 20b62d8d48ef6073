import { CallRefused, ClientClosedError, TranslationError, UpstreamError } from '../errors.js';
import { INTERNAL_ERROR } from '../messages.js';

/**
 * The message of the exception the web method would have thrown for a failed call: each binding
 * writes it in its own form (a Server or Client fault, a 500 text). These errors take their message
 * from the catalogue when they are made; a defect never shows its own text.
 */
export function exceptionMessage(err: unknown): string {
  return err instanceof UpstreamError || err instanceof TranslationError || err instanceof ClientClosedError || err instanceof CallRefused
    ? err.message
    : INTERNAL_ERROR;
}
