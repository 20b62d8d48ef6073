import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { targetReader } from '../src/server/http.js';

/**
 * The request target as the dispatcher reads it: a plain target is read without the URL parser, so
 * every target must come out as the parser gives it (IIS's dot segments resolved, its escapes).
 */

const targetOf = targetReader('/index.asmx');
const read = (url: string) => targetOf({ url, serviceTarget: undefined } as unknown as FastifyRequest);

function parsed(url: string): { pathname: string; search: string } {
  try {
    const { pathname, search } = new URL(url, 'http://localhost');
    return { pathname, search };
  } catch {
    return { pathname: '/', search: '' };
  }
}

describe('the request target', () => {
  it.each([
    ['/index.asmx', '/index.asmx', '', '/index.asmx'],
    ['/index.asmx/Search?query=a+b&x=%20', '/index.asmx/Search', '?query=a+b&x=%20', '/index.asmx'],
    ['/index.asmx?', '/index.asmx', '', '/index.asmx'],
    ['/Index.ASMX?wsdl', '/Index.ASMX', '?wsdl', '/Index.ASMX'],
    ['/x/../index.asmx/Search', '/index.asmx/Search', '', '/index.asmx'],
    ['/x/%2e%2E/index.asmx', '/index.asmx', '', '/index.asmx'],
    ['//evil/index.asmx', '/index.asmx', '', '/index.asmx'],
    ['/index.asmx/Search?q=it\'s "x" <y>', '/index.asmx/Search', '?q=it%27s%20%22x%22%20%3Cy%3E', '/index.asmx'],
    ['/index.asmx#frag', '/index.asmx', '', '/index.asmx'],
    ['/other.asmx', '/other.asmx', '', null],
  ])('%s is %s, %s', (url, pathname, search, servicePath) => {
    expect(read(url)).toEqual({ pathname, search, servicePath });
  });

  it('reads every target as the URL parser does', () => {
    const pieces = [
      '/',
      '/',
      '.',
      '..',
      '%2e',
      '%2E',
      'a',
      'Z9',
      '?',
      '#',
      ' ',
      "'",
      '"',
      '%',
      '%zz',
      '~',
      '-_',
      '\\',
      'é',
      '<>',
      '{|}',
      ':@',
      '+&=',
      '[',
      '^`',
      '!$()*,;',
      '\t',
      '\n',
      '\u0000',
    ];
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    for (let i = 0; i < 20_000; i++) {
      let url = random(8) === 0 ? '' : '/';
      const length = random(10);
      for (let j = 0; j < length; j++) url += pieces[random(pieces.length)];
      const { pathname, search } = read(url);
      expect({ url, pathname, search }).toEqual({ url, ...parsed(url) });
    }
  });
});
