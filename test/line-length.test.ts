import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * No line of the code longer than 140 characters, strings and comments included. Biome's formatter
 * wraps code at 140 columns (biome.jsonc) but leaves a long string, regex or comment as it is; this
 * catches those.
 */

const ROOT = join(import.meta.dirname, '..');
const MAX_LINE_CHARACTERS = 140;
/** The folders checked, every `.ts` file in them and below. */
const FOLDERS = ['src', 'test', 'bench'];

function typeScriptFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return typeScriptFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** `file:line (length)` for every line over the limit, counted in characters (code points), not bytes. */
function overlong(file: string, source: string): string[] {
  return source.split('\n').flatMap((line, index) => {
    const length = [...line].length;
    return length > MAX_LINE_CHARACTERS ? [`${file}:${index + 1} (${length})`] : [];
  });
}

describe(`lines of ${FOLDERS.join('/, ')}/`, () => {
  it(`are at most ${MAX_LINE_CHARACTERS} characters long`, () => {
    const files = FOLDERS.flatMap(typeScriptFiles);
    expect(files.length).toBeGreaterThan(50);
    expect(files.flatMap((file) => overlong(file, readFileSync(join(ROOT, file), 'utf8')))).toEqual([]);
  });

  it('are counted in characters, not bytes', () => {
    expect(overlong('x.ts', '’'.repeat(MAX_LINE_CHARACTERS))).toEqual([]);
    expect(overlong('x.ts', `ok\n${'x'.repeat(MAX_LINE_CHARACTERS + 1)}`)).toEqual([`x.ts:2 (${MAX_LINE_CHARACTERS + 1})`]);
  });
});
