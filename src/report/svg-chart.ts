import { htmlEncode } from '../aspnet/error-page.js';
import { countOf, formatCount } from './format.js';
import type { Series } from './report.js';

/**
 * A bar chart of calls per day as inline SVG: one bar for every day of the log (a day without calls
 * is a bar of height 0, so that the bars line up across charts), each with its date and count as a
 * tooltip. Written here rather than with a charting library: the page must work offline, and a bar
 * per day is all it draws.
 */

const WIDTH = 640;
const HEIGHT = 120;
const LEFT = 48;
const BOTTOM = 18;
const TOP = 6;

export function barChart(series: Series, days: readonly string[]): string {
  const max = Math.max(1, ...series.counts);
  const plotWidth = WIDTH - LEFT;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const step = plotWidth / Math.max(1, days.length);
  const gap = step > 4 ? 1 : 0;
  const bars = series.counts.map((calls, i) => {
    const height = (calls / max) * plotHeight;
    const x = LEFT + i * step;
    return (
      `<rect class="bar" x="${round(x)}" y="${round(TOP + plotHeight - height)}" width="${round(step - gap)}" ` +
      `height="${round(height)}"><title>${days[i] ?? ''}: ${countOf(calls, 'call')}</title></rect>`
    );
  });
  const label = `${series.name}: calls per day`;
  const axis = [
    `<line class="axis" x1="${LEFT}" y1="${TOP + plotHeight}" x2="${WIDTH}" y2="${TOP + plotHeight}"/>`,
    `<text class="tick" x="${LEFT - 4}" y="${TOP + 8}" text-anchor="end">${formatCount(max)}</text>`,
    `<text class="tick" x="${LEFT - 4}" y="${TOP + plotHeight}" text-anchor="end">0</text>`,
    `<text class="tick" x="${LEFT}" y="${HEIGHT - 4}">${days[0] ?? ''}</text>`,
    `<text class="tick" x="${WIDTH}" y="${HEIGHT - 4}" text-anchor="end">${days[days.length - 1] ?? ''}</text>`,
  ];
  return [
    `<figure class="chart" data-series="${htmlEncode(series.name)}">`,
    `<figcaption>${htmlEncode(series.name)} <span class="total">${countOf(
      series.counts.reduce((a, b) => a + b, 0),
      'call',
    )}</span></figcaption>`,
    `<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="${htmlEncode(label)}">`,
    ...axis,
    ...bars,
    '</svg>',
    '</figure>',
  ].join('');
}

const round = (n: number): string => String(Math.round(n * 100) / 100);
