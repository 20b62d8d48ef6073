import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The layers of src/ are the table under "## Layers" in docs/architecture.md: a file imports from its
 * own layer and those below, never from one above, type imports included. This test reads the table,
 * so the document and the rule cannot drift apart; import circles are Biome's (noImportCycles).
 */

const ROOT = join(import.meta.dirname, '..');

/** One row of the table: its number, and the folders (ending in `/`) and files it holds. */
interface Layer {
  readonly number: number;
  readonly places: readonly string[];
}

function layersOf(architecture: string): Layer[] {
  const section = /^## Layers\n([\s\S]*?)(?=^## )/m.exec(architecture)?.[1];
  if (section === undefined) throw new Error('docs/architecture.md has no "## Layers" section');
  return section
    .split('\n')
    .map((line) => /^\| (\d+) \| ([^|]+) \|/.exec(line))
    .filter((row) => row !== null)
    .map((row) => ({ number: Number(row[1]), places: [...row[2]!.matchAll(/`([^`]+)`/g)].map((place) => place[1]!) }));
}

function layerOf(layers: readonly Layer[], file: string): number | undefined {
  return layers.find(({ places }) => places.some((place) => (place.endsWith('/') ? file.startsWith(place) : file === place)))?.number;
}

/** Every relative module a file names: `import … from`, `export … from`, `import '…'` and `import('…')`. */
function importsOf(source: string): string[] {
  const specifiers = [
    ...source.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s*'([^']+)'/gm),
    ...source.matchAll(/^\s*import\s*'([^']+)'/gm),
    ...source.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
  ].map((match) => match[1]!);
  return specifiers.filter((specifier) => specifier.startsWith('.'));
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Imports that run upward, as `from (layer) → to (layer)`, and files no layer places. */
function breaches(layers: readonly Layer[], files: ReadonlyMap<string, string>): { upward: string[]; unplaced: string[] } {
  const upward: string[] = [];
  const unplaced: string[] = [];
  for (const [file, source] of files) {
    const own = layerOf(layers, file);
    if (own === undefined) {
      unplaced.push(file);
      continue;
    }
    for (const specifier of importsOf(source)) {
      const target = normalize(join(dirname(file), specifier)).replace(/\.js$/, '.ts');
      const theirs = layerOf(layers, target);
      if (theirs !== undefined && theirs > own) upward.push(`${file} (${own}) → ${target} (${theirs})`);
    }
  }
  return { upward, unplaced };
}

const layers = layersOf(readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8'));
// The AssemblyScript pass is compiled on its own, against its own standard library.
const files = new Map(
  sourceFiles('src')
    .filter((file) => !file.startsWith('src/xml/wasm/'))
    .map((file) => [relative(ROOT, join(ROOT, file)), readFileSync(join(ROOT, file), 'utf8')] as const),
);

describe('the layers of src/ (docs/architecture.md, Layers)', () => {
  it('are numbered from 1 up, each folder or file on one layer', () => {
    expect(layers.map((layer) => layer.number)).toEqual(layers.map((_, index) => index + 1));
    const places = layers.flatMap((layer) => layer.places);
    expect(new Set(places).size).toBe(places.length);
  });

  it('place every source file', () => {
    expect(files.size).toBeGreaterThan(50);
    expect(breaches(layers, files).unplaced).toEqual([]);
  });

  it('are never imported upward, type imports included', () => {
    expect(breaches(layers, files).upward).toEqual([]);
  });

  it('catch an upward import in any form the code writes one', () => {
    const upwardSources = [
      "import type { Config } from './config/schema.js';",
      "export { loadConfig } from './config/load.js';",
      "import {\n  type Config,\n  loadConfig,\n} from './config/load.js';",
      "const main = await import('./config/load.js');",
    ];
    for (const source of upwardSources) {
      expect(breaches(layers, new Map([['src/operations.ts', source]])).upward).toEqual([
        `src/operations.ts (1) → ${source.includes('schema') ? 'src/config/schema.ts' : 'src/config/load.ts'} (2)`,
      ]);
    }
    expect(breaches(layers, new Map([['src/server/app.ts', "import { OPERATIONS } from '../operations.js';"]])).upward).toEqual([]);
    expect(breaches(layers, new Map([['src/nowhere.ts', '']])).unplaced).toEqual(['src/nowhere.ts']);
  });
});
