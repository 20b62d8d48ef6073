import { redact } from './redact.js';

/** None of the characters that spell a parameter, an element or an escape: a key can stand in it only as itself. */
const PLAIN = /^[^=<>&%+\\]*$/;

/**
 * Text a caller sent that the hit logs as it is (its User-Agent, its `version`), with the caller's
 * own key and any key parameter redacted: a client whose arguments are swapped sends its key as
 * `version`, and some put it in their User-Agent. Plain text without the key, nearly all of it, is
 * returned without the full redaction's cost, which every call would pay.
 */
export function redactCallerText(text: string | null, apiKey: string | null): string | null {
  if (text === null) return null;
  if (PLAIN.test(text) && (apiKey === null || !text.toLowerCase().includes(apiKey.toLowerCase()))) return text;
  return redact(text, apiKey === null ? [] : [apiKey]);
}
