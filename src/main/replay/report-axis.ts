/** Round axis steps: 1, 2 or 5 times a power of ten. */
export function niceStep(span: number, ticks: number): number {
  const raw = span / Math.max(1, ticks);
  const pow = 10 ** Math.floor(Math.log10(Math.max(raw, 1e-9)));
  for (const m of [1, 2, 5, 10]) if (m * pow >= raw) return m * pow;
  return 10 * pow;
}

/** Ticks from 0 by a round step up to the first one at or above `max`: the axis ends on a round value. */
export function roundTicks(max: number, count: number): number[] {
  const step = niceStep(max, count);
  const ticks = [0];
  while ((ticks.at(-1) as number) < max - step * 1e-9) ticks.push(Math.round(ticks.length * step * 1e9) / 1e9);
  return ticks;
}
