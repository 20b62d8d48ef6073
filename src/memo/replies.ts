/**
 * The replies written from a page the cache keeps, kept with the page: a cache hit then writes a reply
 * it already wrote, not the envelope around the page again (a copy of the whole page) or its indented
 * document (a pass over it). Tied to the page's bytes, so they go when the cache lets the page go; at
 * most FORMS_PER_PAGE forms a page (SOAP 1.1, SOAP 1.2, the indented document of GET and POST), the
 * oldest replaced first. `form` names everything besides the bytes that the reply is written from.
 */

const FORMS_PER_PAGE = 3;

interface Written {
  readonly form: string;
  readonly reply: Buffer;
}

const written = new WeakMap<Uint8Array, Written[]>();

/** The reply in `form` written from `page`: as written before, or by `write` (whose Buffer is kept, so not one the pool lends). */
export function replyFrom(page: Uint8Array, form: string, write: () => Buffer): Buffer {
  const forms = written.get(page);
  const known = forms?.find((one) => one.form === form);
  if (known !== undefined) return known.reply;
  const reply = write();
  if (forms === undefined) written.set(page, [{ form, reply }]);
  else {
    if (forms.length >= FORMS_PER_PAGE) forms.shift();
    forms.push({ form, reply });
  }
  return reply;
}
