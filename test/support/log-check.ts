import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DestinationStream } from 'pino';

/**
 * What an operator reads in the proxy's log, checked (issue 28): lines at warn or above, which
 * docs/operating.md must list for the case, and any line that spells a key a caller sent.
 */

const LEVELS: Readonly<Record<string, number>> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };

/** The events docs/operating.md lists under "### Log events", with the level each is logged at. */
export function documentedEvents(): Map<string, string> {
  const operating = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'operating.md'), 'utf8');
  const section = /^### Log events\n([\s\S]*?)(?=^##)/m.exec(operating)?.[1];
  if (section === undefined) throw new Error('docs/operating.md has no "### Log events" section');
  const events = new Map<string, string>();
  // A row may name several events, with one level for all or one level each.
  for (const [, names, levels] of section.matchAll(/^\| (`[a-z_]+`(?:, `[a-z_]+`)*) \| ([a-z, ]+) \|/gm)) {
    const levelList = (levels as string).split(', ');
    const named = [...(names as string).matchAll(/`([a-z_]+)`/g)].map((match) => match[1] as string);
    for (const [at, name] of named.entries()) events.set(name, levelList[at] ?? (levelList[0] as string));
  }
  return events;
}

/** Lines at warn or above, each as its `event` (or its message, for a line that names none). */
export function loudEvents(lines: readonly string[]): string[] {
  return lines
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => (LEVELS[String(line.level)] ?? 0) >= (LEVELS.warn as number))
    .map((line) => String(line.event ?? line.msg));
}

/** The lines that spell one of `keys`: as sent, in another ASCII case, or %-escaped. */
export function linesHolding(lines: readonly string[], keys: readonly string[]): string[] {
  const spellings = keys.flatMap((key) => [
    key,
    key.toLowerCase(),
    key.toUpperCase(),
    encodeURIComponent(key),
    [...key].map((c) => `%${c.charCodeAt(0).toString(16)}`).join(''),
  ]);
  return lines.filter((line) => spellings.some((spelling) => line.toLowerCase().includes(spelling.toLowerCase())));
}

/** The lines of a log written in memory, for a proxy started in the test's own process. */
export function logInMemory(): { readonly stream: DestinationStream; readonly lines: string[] } {
  const lines: string[] = [];
  return { stream: { write: (line: string) => void lines.push(line.trimEnd()) }, lines };
}

/**
 * The log of a run: nothing at warn or above but `allowed` (each listed in docs/operating.md at warn
 * or above), and no line that spells one of `keys`. Returns what is wrong, empty when nothing is.
 */
export function logProblems(lines: readonly string[], keys: readonly string[], allowed: readonly string[] = []): string[] {
  const documented = documentedEvents();
  return [
    ...allowed.filter((event) => !/^(warn|error|fatal)$/.test(documented.get(event) ?? '')).map((event) => `${event} is not documented`),
    ...loudEvents(lines)
      .filter((event) => !allowed.includes(event))
      .map((event) => `unexpected: ${event}`),
    ...linesHolding(lines, keys).map((line) => `holds a key: ${line}`),
  ];
}
