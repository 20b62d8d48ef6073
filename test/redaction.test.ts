import fc from 'fast-check';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createShadows } from '../src/legacy-service/shadows.js';
import { readResponse } from '../src/outbound/response.js';
import { redact } from '../src/redaction/redact.js';
import { escapedUrls, everySpelling, OPERATOR_SPELLINGS, spelledKeys } from './support/spellings.js';
import { SOAP11_ENV } from './support/wire.js';

/**
 * Keys never logged in any spelling: what the proxy writes of a text that quotes a request (a
 * `shadow_mismatch` line, an upstream's message as a fault) holds no key, however the text spells it,
 * and nothing else of the text changes.
 */

const xmlEscaped = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

describe('what names a key: parameters and elements, whatever the spelling of the name', () => {
  it(
    'the value of apiKey and appKey in a query, a form or a quoted URL, the name decoded and matched in any case, as ASP.NET ' + 'reads it',
    () => {
      expect(
        redact('GET /index.asmx/Search?query=dog&APIKEY=a&%61piKey=b%2b&api%4Bey=c+d&%u0061ppKey=e&apikeys=f&my_apiKey=g&apiKey=', []),
      ).toBe(
        'GET /index.asmx/Search?query=dog&APIKEY=[redacted]&%61piKey=[redacted]&api%4Bey=[redacted]&%u0061ppKey=[redacted]' +
          '&apikeys=f&my_apiKey=g&apiKey=',
      );
      // A value runs to the end of the pair: what follows it in the same word may be part of it.
      expect(redact('Bad form: query=dog&amp;apiKey=x%2by, then "appKey=z" (appKey=w)', [])).toBe(
        'Bad form: query=dog&amp;apiKey=[redacted] then "appKey=[redacted]" (appKey=[redacted]',
      );
    },
  );

  it('the value of a key parameter in a quoted URL escaped once (= and & escaped in any case or as %u), or in a URL-valued one', () => {
    const quoted =
      'Invalid product. returnUrl=http%3A%2F%2Fupstream%2Fproduct.search.cp%3Fv%3D3%26appKey%3DOPERATORsecret42%26productId%3D1' +
      ' next=a%u0026APIKEY%u003dk%2Bw%U0026b=1 and apikey%3dx%20y, back=http://proxy/?appKey=literal&q=1';
    expect(redact(quoted, [], { wholeTokens: true })).toBe(
      'Invalid product. returnUrl=http%3A%2F%2Fupstream%2Fproduct.search.cp%3Fv%3D3%26appKey%3D[redacted]%26productId%3D1' +
        ' next=a%u0026APIKEY%u003d[redacted]%U0026b=1 and apikey%3d[redacted]%20y, back=http://proxy/?appKey=[redacted]&q=1',
    );
  });

  it('the content of an apiKey or appKey element, whatever its prefix, attributes, whitespace or the escaping of its brackets', () => {
    const body =
      '<soap:Body><Search xmlns="http://tempuri.org/"><apiKey>&#97;b&amp;c</apiKey><q:appKey xmlns:q="urn:x" >x y</q:appKey >' +
      '<APIKEY\n>z</APIKEY><apiKey/><apiKeys>kept</apiKeys><query>dog</query></Search></soap:Body>';
    expect(redact(body, [])).toBe(
      '<soap:Body><Search xmlns="http://tempuri.org/"><apiKey>[redacted]</apiKey><q:appKey xmlns:q="urn:x" >[redacted]</q:appKey >' +
        '<APIKEY\n>[redacted]</APIKEY><apiKey/><apiKeys>kept</apiKeys><query>dog</query></Search></soap:Body>',
    );
    expect(redact('quoted: &lt;apiKey&gt;k1&lt;/apiKey&gt; and &#60;appKey&#62;k2&#60;/appKey&#x3E;', [])).toBe(
      'quoted: &lt;apiKey&gt;[redacted]&lt;/apiKey&gt; and &#60;appKey&#62;[redacted]&#60;/appKey&#x3E;',
    );
    // A text cut inside the element.
    expect(redact('<Search><apiKey>secret-and-mo', [])).toBe('<Search><apiKey>[redacted]');
  });

  it('a text cut inside a spelling of the key has it redacted as far as it goes, even mid-escape', () => {
    for (const cut of ['a%2bb', 'a%2bb%2', 'a%2bb%', 'a&#43;b&#4', 'a%2bb%c3', 'a\\u002bb\\u00']) {
      expect(redact(`key: ${cut}`, ['a+bé-and-more'], { truncated: true })).toBe('key: [redacted]');
    }
    // Not cut: the same start is only a start.
    expect(redact('key: a%2bb', ['a+bé-and-more'])).toBe('key: a%2bb');
  });

  it('a whole token beside an escape stands alone, but not a part of the escape or of a word', () => {
    const text = 'token%3DAb3dEf9h, Ab3dEf9h%20then %20Ab3dEf9h %u0020Ab3dEf9h\\u0020; not xAb3dEf9h nor %4Ab3dEf9h';
    expect(redact(text, ['Ab3dEf9h'], { wholeTokens: true })).toBe(
      'token%3D[redacted], [redacted]%20then %20[redacted] %u0020[redacted]\\u0020; not xAb3dEf9h nor %4Ab3dEf9h',
    );
  });

  it('a key in any ASCII case and in JSON \\u escapes, except in a text a client reads: there the case is kept', () => {
    const echoed = 'K3YSECRETQ7, k3ysecretq7 and \\u004B3ySecretQ\\u0037';
    expect(redact(echoed, ['K3ySecretQ7'])).toBe('[redacted], [redacted] and [redacted]');
    expect(redact(echoed, ['K3ySecretQ7'], { wholeTokens: true })).toBe('K3YSECRETQ7, k3ysecretq7 and [redacted]');
  });

  it('a key that holds what reads as an escape (`%aa`), in a text an XML writer escaped', () => {
    expect(redact('Unknown apiKey |aaa%aaa&gt;| in this request.', ['aaa%aaa>'], { wholeTokens: true })).toBe(
      'Unknown apiKey |[redacted]| in this request.',
    );
  });

  it('leaves a marker already there as it is: a short key is not found again inside it', () => {
    expect(redact('a [redacted] e', ['e'])).toBe('a [redacted] [redacted]');
  });
});

describe('the key an answer echoes, in any spelling (properties)', () => {
  const [BEFORE, AFTER] = ['Unknown apiKey |', '| in this request.'];
  const notInTheWords = (key: string): boolean => !`${BEFORE}${AFTER}`.includes(key) && !'[redacted]'.includes(key);
  /** Every string a logged value holds. */
  const stringsOf = (value: unknown): string[] =>
    typeof value === 'string' ? [value] : typeof value === 'object' && value !== null ? Object.values(value).flatMap(stringsOf) : [];

  /** The `<help>` message of an upstream with `text`, as the fault text a caller reads. */
  const faultText = (text: string, secrets: readonly string[]): string => {
    try {
      readResponse(403, Buffer.from(`<help><exception-message>${xmlEscaped(text)}</exception-message></help>`), 'searchResultSet', secrets);
    } catch (err) {
      return (err as Error).message;
    }
    return '';
  };

  const soap = (payload: string): string => `<s:Envelope xmlns:s="${SOAP11_ENV}"><s:Body>${payload}</s:Body></s:Envelope>`;
  /** The old service's fault with `text` and the translated path's result over a binding, and how a diff shows each. */
  const ANSWERS = {
    httpGet: (text: string) => ({
      legacy: { status: 500, body: `${text}\r\n` },
      translated: { status: 200, body: '<searchResultSet total="0" />' },
      shown: (redacted: string) => ({
        path: '/',
        translated: 'result <searchResultSet total="0" />',
        legacy: `fault HTTP 500: ${redacted}\r\n`,
      }),
    }),
    soap11: (text: string) => ({
      legacy: {
        status: 500,
        body: soap(`<s:Fault><faultcode>s:Client</faultcode><faultstring>${xmlEscaped(text)}</faultstring></s:Fault>`),
      },
      translated: { status: 200, body: soap('<SearchResponse xmlns="urn:t"><SearchResult /></SearchResponse>') },
      shown: (redacted: string) => ({ path: '/', translated: 'result <{urn:t}SearchResult />', legacy: `fault Client: ${redacted}` }),
    }),
  };

  it('a shadow_mismatch line holds no spelling of the caller’s key, and the rest of the line is as the answers say', async () => {
    const written: string[] = [];
    const log = pino({ level: 'info', base: null, timestamp: false }, { write: (line: string) => written.push(line) });
    const shadows = createShadows(100, new Registry(), log);
    const bindings = fc.constantFrom(...(Object.keys(ANSWERS) as (keyof typeof ANSWERS)[]));
    await fc.assert(
      fc.asyncProperty(spelledKeys(OPERATOR_SPELLINGS), bindings, async ({ key, spelled }, binding) => {
        fc.pre(notInTheWords(key));
        written.length = 0;
        const { legacy, translated, shown } = ANSWERS[binding](`${BEFORE}${spelled}${AFTER}`);
        const compare = shadows.admit({ operation: 'Search', binding, client: 'shop', requestId: 'r1', trace: null, apiKey: key })!;
        compare(Promise.resolve(translated), Promise.resolve(legacy));
        while (written.length === 0) await new Promise((resolve) => setImmediate(resolve));
        const line = written[0]!;
        expect(JSON.parse(line)).toEqual({
          level: 40,
          event: 'shadow_mismatch',
          operation: 'Search',
          binding,
          client: 'shop',
          requestId: 'r1',
          diff: shown(`${BEFORE}[redacted]${AFTER}`),
          msg: 'shadow Search: the answers differ at /',
        });
        // The line as written (JSON), and each value in it as a reader of the log gets it.
        for (const value of [line, ...stringsOf(JSON.parse(line))]) {
          for (const spelling of everySpelling(key, OPERATOR_SPELLINGS)) expect(value).not.toContain(spelling);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('an upstream message that echoes the appKey sent has it redacted in the fault text, the words around it kept', () => {
    fc.assert(
      fc.property(spelledKeys(), ({ key, spelled }) => {
        fc.pre(notInTheWords(key));
        const message = faultText(`${BEFORE}${spelled}${AFTER}`, [key]);
        expect(message).toBe(`${BEFORE}[redacted]${AFTER}`);
        for (const spelling of everySpelling(key)) expect(message).not.toContain(spelling);
      }),
      { numRuns: 300 },
    );
  });

  it('an upstream message quoting its request URL escaped has the key parameter redacted, whatever the escapes, known key or not', () => {
    fc.assert(
      fc.property(escapedUrls(), ({ key, quoted, redacted }) => {
        for (const secrets of [[], [key]]) {
          expect(faultText(`Invalid product. returnUrl=${quoted}`, secrets)).toBe(`Invalid product. returnUrl=${redacted}`);
        }
      }),
      { numRuns: 300 },
    );
  });
});
