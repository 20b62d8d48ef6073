import { INT32_FORMAT, INT32_RANGE } from '../messages.js';

/**
 * .NET Int32 parsing with the invariant culture and NumberStyles.Integer: surrounding white space
 * and one leading sign allowed, ASCII digits only. Answers the number or the .NET failure message.
 */
export function parseInt32(text: string): number | { readonly error: string } {
  const match = /^[\t\n\v\f\r ]*([+-]?)(\d+)[\t\n\v\f\r ]*$/.exec(text);
  if (!match) return { error: INT32_FORMAT };
  const digits = (match[2] as string).replace(/^0+(?=\d)/, '');
  // Compare as text before converting, so that long inputs never lose precision.
  if (digits.length > 10) return { error: INT32_RANGE };
  const value = Number((match[1] === '-' ? '-' : '') + digits);
  if (value > 2147483647 || value < -2147483648) return { error: INT32_RANGE };
  return value === 0 ? 0 : value;
}
