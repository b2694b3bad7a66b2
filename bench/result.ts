/** One measured figure beside its target. */
export interface BenchResult {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
  readonly target: string;
  readonly ok: boolean;
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}
