import { ClientClosedError, TranslationError, UpstreamError } from '../errors.js';
import { INTERNAL_ERROR, upstreamText } from '../messages.js';

/**
 * The message of the exception the web method would have thrown for a failed call: each binding
 * writes it in its own form (a Server or Client fault, a 500 text). A defect never shows its own text.
 */
export function exceptionMessage(err: unknown): string {
  if (err instanceof UpstreamError) return upstreamText(err.failure);
  if (err instanceof TranslationError || err instanceof ClientClosedError) return err.message;
  return INTERNAL_ERROR;
}
