import { writeFile } from 'node:fs/promises';
import type { Readable, Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/load.js';
import { ConfigError } from '../config/problems.js';
import type { Config } from '../config/schema.js';
import { HitCollector } from './collect.js';
import { readHitLine, type ReadLine } from './hit-line.js';
import { logLines, logSource, MAX_LINE_BYTES, OVERLONG_LINE, UnreadableLog, type LogSource } from './log-lines.js';
import { NO_PROGRESS, progressBar, type Progress } from './progress.js';
import { renderHtml } from './render-html.js';
import { renderJson } from './render-json.js';
import { renderTable } from './render-table.js';
import { buildReport, type InputSummary, type SkippedLine } from './report.js';
import { noticeHtml, noticeText } from './notice.js';
import { migrationPolicyOf } from '../migration/clients.js';

/**
 * `npm run report -- [--format table|json|html] [--out FILE] [--progress] [FILE…]`: the migration
 * report over hit logs (files, `-` or none for stdin, gzipped or not). A malformed line is counted
 * and named, not fatal; a file that cannot be read (missing, truncated gzip) is named, the report
 * covers the rest, and the exit code is 1. Usage errors exit 2.
 */

export interface ReportIo {
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly stdin: Readable & { readonly isTTY?: boolean };
  readonly stdout: Writable & { readonly isTTY?: boolean };
  readonly stderr: Writable & { readonly isTTY?: boolean };
  /** When the report is made, which each client's status is judged at; the clock by default. */
  readonly now?: () => number;
}

const FORMATS = ['table', 'json', 'html'] as const;
type Format = (typeof FORMATS)[number];

const USAGE =
  'usage: npm run report -- [--format table|json|html] [--out FILE] [--progress] [--client NAME --notice] [FILE…]  ' +
  '(no FILE or - : stdin; .gz is read as such; --notice: the migration notice of one client, as text or html)';

/** Malformed lines named in the report, to look at; the rest are counted. */
const SKIPPED_SHOWN = 20;

const OVERLONG: ReadLine = { kind: 'malformed', reason: `a line longer than ${MAX_LINE_BYTES / 1024 / 1024} MiB` };

export async function runReport(io: ReportIo): Promise<number> {
  const fail = (message: string, code: number): number => {
    io.stderr.write(`report: ${message}\n`);
    return code;
  };
  let values: { format?: string; out?: string; progress?: boolean; help?: boolean; client?: string; notice?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: [...io.args],
      allowPositionals: true,
      options: {
        format: { type: 'string', default: 'table' },
        out: { type: 'string' },
        progress: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        client: { type: 'string' },
        notice: { type: 'boolean' },
      },
    }));
  } catch (err) {
    return fail(`${(err as Error).message}\n${USAGE}`, 2);
  }
  if (values.help) return fail(USAGE, 0);
  const format = values.format as Format;
  if (!FORMATS.includes(format))
    return fail(`--format must be one of ${FORMATS.join(', ')}, got ${JSON.stringify(values.format)}\n${USAGE}`, 2);
  if ((values.client === undefined) !== (values.notice !== true)) return fail(`--client NAME and --notice go together\n${USAGE}`, 2);
  if (values.notice === true && format === 'json')
    return fail(`--notice writes text (--format table) or a page (--format html)\n${USAGE}`, 2);
  const names = positionals.length === 0 ? ['-'] : positionals;
  if (names.includes('-') && io.stdin.isTTY) return fail(`no log file named, and stdin is a terminal\n${USAGE}`, 2);

  let config: Config;
  try {
    config = loadConfig(io.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return fail(err.message, 2);
  }

  const opened = await Promise.all(names.map((name) => logSource(name, io.stdin).catch(unreadable)));
  const sizes = opened.map((source) => (source instanceof UnreadableLog ? 0 : source.size));
  const progress =
    values.progress || io.stderr.isTTY
      ? progressBar((text) => io.stderr.write(text), sizes.includes(null) ? null : sizes.reduce<number>((a, b) => a + (b ?? 0), 0))
      : NO_PROGRESS;
  const collector = new HitCollector();
  const input = await readAll(opened, collector, progress);
  progress.done();
  for (const source of input.sources) if (source.error !== null) io.stderr.write(`report: ${source.name}: ${source.error}\n`);

  const { sunsetAt, quietDays } = config.deprecation;
  const report = buildReport(collector.result(), input, config.paging.profiles, {
    policy: { sunsetAt, quietDays },
    now: (io.now ?? Date.now)(),
  });
  const bold = values.out === undefined && io.stdout.isTTY === true && io.env.NO_COLOR === undefined;
  let text: string;
  if (values.client !== undefined) {
    const client = report.clients.find((one) => one.client === values.client);
    if (client === undefined) return fail(`no call of ${JSON.stringify(values.client)} is in the logs read`, 1);
    text = format === 'html' ? noticeHtml(client, migrationPolicyOf(config)) : noticeText(client, migrationPolicyOf(config));
  } else text = format === 'json' ? renderJson(report) : format === 'html' ? renderHtml(report) : renderTable(report, bold);
  if (values.out === undefined) io.stdout.write(text);
  else {
    try {
      await writeFile(values.out, text);
    } catch (err) {
      return fail(`cannot write ${values.out}: ${(err as Error).message}`, 1);
    }
  }
  return input.sources.some((source) => source.error !== null) ? 1 : 0;
}

/** An UnreadableLog as a value; anything else is a defect, thrown on. */
function unreadable(err: unknown): UnreadableLog {
  if (err instanceof UnreadableLog) return err;
  throw err;
}

/** Reads every source in turn into `collector`; what could not be read is in the summary, not thrown. */
async function readAll(
  sources: readonly (LogSource | UnreadableLog)[],
  collector: HitCollector,
  progress: Progress,
): Promise<InputSummary> {
  const summary = { lines: 0, hits: 0, otherLines: 0, malformed: 0 };
  const skipped: SkippedLine[] = [];
  const read: InputSummary['sources'][number][] = [];
  for (const source of sources) {
    if (source instanceof UnreadableLog) {
      read.push({ name: source.source, lines: 0, hits: 0, error: source.detail });
      continue;
    }
    let lines = 0;
    let hits = 0;
    let error: string | null = null;
    try {
      for await (const text of logLines(source.name, source.open(), (bytes) => progress.read(bytes))) {
        lines++;
        const line = text === OVERLONG_LINE ? OVERLONG : readHitLine(text);
        if (line.kind === 'hit') {
          hits++;
          collector.add(line.hit);
        } else if (line.kind === 'other') summary.otherLines++;
        else {
          summary.malformed++;
          if (skipped.length < SKIPPED_SHOWN) skipped.push({ source: source.name, line: lines, reason: line.reason });
        }
      }
    } catch (err) {
      error = unreadable(err).detail;
    }
    summary.lines += lines;
    summary.hits += hits;
    read.push({ name: source.name, lines, hits, error });
  }
  return { sources: read, ...summary, skipped };
}
