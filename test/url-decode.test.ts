import { describe, expect, it } from 'vitest';
import { percentDecode, queryCollection, urlDecode } from '../src/aspnet/url-decode.js';

/** HttpUtility.UrlDecode and ASP.NET's HttpValueCollection, as every binding reads them. */

describe('urlDecode', () => {
  it.each([
    ['a+b', 'a b'],
    ['a%2Bb', 'a+b'],
    ['caf%C3%A9', 'café'],
    ['s%u0031', 's1'],
    ['%u00e9t%C3%A9', 'été'],
    ['100%', '100%'],
    ['%ZZ%4', '%ZZ%4'],
    ['%FF', '\uFFFD'],
  ])('%s → %s', (encoded, decoded) => {
    expect(urlDecode(encoded)).toBe(decoded);
  });

  it('keeps + literal in a path', () => {
    expect(percentDecode('a+b%20c')).toBe('a+b c');
  });
});

describe('queryCollection', () => {
  const get = queryCollection('wsdl&Op=Search&op=x&empty=&q=a+b');

  it('a part without "=" is a nameless value', () => {
    expect(get(null)).toBe('wsdl');
  });

  it('names match in any case; repeats are comma-joined in order', () => {
    expect(get('OP')).toBe('Search,x');
  });

  it('name= is an empty value, an absent name is undefined', () => {
    expect(get('empty')).toBe('');
    expect(get('missing')).toBeUndefined();
    expect(get('q')).toBe('a b');
  });
});
