import { Gauge, type Registry } from 'prom-client';
import { windowEnd, type Schedule } from './schedule.js';

/**
 * `legacy_brownout_active{brownout}`: 1 while a window of the brownout is open, else 0, read from the
 * schedule when scraped (the one the running configuration makes), so that it is right with no calls
 * coming in. One series per configured brownout: the label is bounded by the configuration.
 */
export function registerBrownoutGauge(registry: Registry, schedule: () => Schedule, now: () => number): void {
  new Gauge({
    name: 'legacy_brownout_active',
    help: '1 while a window of the scheduled brownout is open, else 0 (whatever the calls it names).',
    labelNames: ['brownout'] as const,
    registers: [registry],
    collect() {
      const at = now();
      // The running configuration's brownouts only: a reload that drops one drops its series.
      this.reset();
      for (const brownout of schedule().brownouts) this.set({ brownout: brownout.name }, windowEnd(brownout, at) === null ? 0 : 1);
    },
  });
}
