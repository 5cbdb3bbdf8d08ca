// The HTML report of a bench run: one self-contained file (no scripts, no external assets) with inline SVG
// plots: the Stoa/etcd ratio of every row, per workload a latency histogram, percentiles and throughput over
// time, and the failover timelines with a marker at every kill.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  histogramEdgesMs,
  writeJson,
  type BenchRow,
  type LatencySummary,
  type LoadResult,
  type Target,
} from './measure.js';

export interface ReportFailover {
  readonly kills: ReadonlyArray<{
    killedAt: number;
    member: number;
    windowMs: number;
    writingFrom: number;
    writingTo: number;
  }>;
  readonly medianMs: number;
  readonly series: readonly number[];
  readonly bucketMs: number;
}

export interface ReportInput {
  readonly scenario: string;
  readonly date: string;
  readonly gitCommit: string;
  readonly seed?: number;
  readonly machine: Record<string, string | number>;
  readonly loadAverage: { before: readonly number[]; after: readonly number[] };
  readonly configuration: Record<string, unknown>;
  readonly rows: readonly BenchRow[];
  readonly loads?: Record<string, Partial<Record<Target, LoadResult | LatencySummary>>>;
  readonly failover?: Partial<Record<Target, ReportFailover>>;
  /** The heading (default "Stoa vs etcd"). */
  readonly title?: string;
}

const colors: Record<Target, string> = { stoa: '#1f6fb4', etcd: '#e0802b' };
const targets: readonly Target[] = ['stoa', 'etcd'];

const escape = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const fmt = (n: number): string =>
  !Number.isFinite(n)
    ? String(n)
    : Math.abs(n) >= 100
      ? n.toFixed(0)
      : Math.abs(n) >= 1
        ? n.toFixed(2)
        : n.toPrecision(2);

interface Series {
  readonly name: string;
  readonly color: string;
  readonly points: ReadonlyArray<readonly [number, number]>;
}

interface PlotOptions {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly logX?: boolean;
  /** Draw steps (histogram) rather than straight segments. */
  readonly step?: boolean;
  readonly markers?: ReadonlyArray<{ x: number; label: string }>;
  readonly width?: number;
  readonly height?: number;
}

/** A line plot as an SVG string, with axes, 5 ticks per axis, a legend and optional vertical markers. */
function plot(series: readonly Series[], options: PlotOptions): string {
  const width = options.width ?? 460;
  const height = options.height ?? 240;
  const m = { left: 58, right: 24, top: 36, bottom: 40 };
  const all = series.flatMap((s) => s.points).filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  const tx = (x: number): number => (options.logX === true ? Math.log10(Math.max(x, 1e-9)) : x);
  const xs = all.map(([x]) => tx(x)).concat((options.markers ?? []).map((k) => tx(k.x)));
  let x0 = xs.length > 0 ? Math.min(...xs) : 0;
  let x1 = xs.length > 0 ? Math.max(...xs) : 1;
  if (x1 === x0) x1 = x0 + 1;
  const y0 = 0;
  let y1 = all.length > 0 ? Math.max(...all.map(([, y]) => y)) * 1.08 : 1;
  if (!(y1 > 0)) y1 = 1;
  if (options.logX !== true) x0 = Math.min(x0, 0);
  const px = (x: number): number => m.left + ((tx(x) - x0) / (x1 - x0)) * (width - m.left - m.right);
  const py = (y: number): number => height - m.bottom - ((y - y0) / (y1 - y0)) * (height - m.top - m.bottom);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="10">`,
    `<text x="${width / 2}" y="14" text-anchor="middle" font-size="12" font-weight="bold">${escape(options.title)}</text>`,
    `<line x1="${m.left}" y1="${height - m.bottom}" x2="${width - m.right}" y2="${height - m.bottom}" stroke="#444"/>`,
    `<line x1="${m.left}" y1="${m.top}" x2="${m.left}" y2="${height - m.bottom}" stroke="#444"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const yv = y0 + ((y1 - y0) * i) / 4;
    const y = py(yv);
    parts.push(`<line x1="${m.left}" y1="${y}" x2="${width - m.right}" y2="${y}" stroke="#eee"/>`);
    parts.push(`<text x="${m.left - 4}" y="${y + 3}" text-anchor="end">${fmt(yv)}</text>`);
    const xt = x0 + ((x1 - x0) * i) / 4;
    const xv = options.logX === true ? Math.pow(10, xt) : xt;
    parts.push(`<text x="${px(xv)}" y="${height - m.bottom + 13}" text-anchor="middle">${fmt(xv)}</text>`);
  }
  parts.push(
    `<text x="${(m.left + width - m.right) / 2}" y="${height - 6}" text-anchor="middle">${escape(options.xLabel)}</text>`,
  );
  parts.push(
    `<text transform="translate(12 ${(m.top + height - m.bottom) / 2}) rotate(-90)" text-anchor="middle">${escape(options.yLabel)}</text>`,
  );
  for (const [index, marker] of (options.markers ?? []).entries()) {
    const x = px(marker.x);
    parts.push(
      `<line x1="${x}" y1="${m.top}" x2="${x}" y2="${height - m.bottom}" stroke="#c00" stroke-dasharray="3 2"/>`,
    );
    parts.push(
      `<text x="${x + 2}" y="${m.top + 9 + 11 * (index % 2)}" fill="#c00">${escape(marker.label)}</text>`,
    );
  }
  // The legend: one row under the title. A point with a non-finite y breaks the line (no data there).
  let lx = m.left;
  for (const s of series) {
    let d = '';
    let move = true;
    for (const [x, y] of s.points) {
      if (!Number.isFinite(x) || !Number.isFinite(y)) {
        move = true;
        continue;
      }
      if (move) d += `M${px(x).toFixed(1)},${py(y).toFixed(1)}`;
      else if (options.step === true) d += `H${px(x).toFixed(1)}V${py(y).toFixed(1)}`;
      else d += `L${px(x).toFixed(1)},${py(y).toFixed(1)}`;
      move = false;
    }
    parts.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.6"/>`);
    parts.push(`<rect x="${lx}" y="24" width="10" height="3" fill="${s.color}"/>`);
    parts.push(`<text x="${lx + 14}" y="28">${escape(s.name)}</text>`);
    lx += 30 + 6 * s.name.length;
  }
  parts.push('</svg>');
  return parts.join('');
}

/** Horizontal bars of stoa/etcd per row, with the line at 1 and the goal side shaded. */
function ratioChart(rows: readonly BenchRow[]): string {
  const width = 760;
  const rowHeight = 18;
  const left = 360;
  const height = rows.length * rowHeight + 30;
  const max = Math.max(2, ...rows.map((r) => (Number.isFinite(r.ratio) ? r.ratio : 0))) * 1.05;
  const px = (v: number): number => left + (v / max) * (width - left - 50);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">`,
  ];
  for (const [i, r] of rows.entries()) {
    const y = 10 + i * rowHeight;
    const met = r.higherIsBetter ? r.ratio >= 1 : r.ratio <= 1;
    const ratio = Number.isFinite(r.ratio) ? r.ratio : 0;
    parts.push(`<text x="${left - 6}" y="${y + 11}" text-anchor="end">${escape(r.name)}</text>`);
    parts.push(
      `<rect x="${left}" y="${y + 2}" width="${Math.max(0, px(ratio) - left)}" height="12" fill="${met ? '#3a9a4a' : '#c94040'}"/>`,
    );
    parts.push(
      `<text x="${px(ratio) + 4}" y="${y + 12}">${ratio.toFixed(2)}${r.higherIsBetter ? ' ↑' : ' ↓'}</text>`,
    );
  }
  parts.push(
    `<line x1="${px(1)}" y1="4" x2="${px(1)}" y2="${height - 20}" stroke="#000" stroke-dasharray="4 2"/>`,
  );
  parts.push(
    `<text x="${px(1)}" y="${height - 6}" text-anchor="middle">1 = parity (↑ higher is better, ↓ lower is better)</text>`,
  );
  parts.push('</svg>');
  return parts.join('');
}

function latencyPlots(name: string, summaries: Partial<Record<Target, LatencySummary>>): string {
  const present = targets.filter((t) => summaries[t] !== undefined);
  const histogram = plot(
    present.map((t) => {
      const s = summaries[t]!;
      const total = Math.max(1, s.count);
      return {
        name: t,
        color: colors[t],
        points: s.histogram.map((count, i) => [histogramEdgesMs[i]!, (100 * count) / total] as const),
      };
    }),
    {
      title: `${name}: latency histogram`,
      xLabel: 'latency (ms, log scale)',
      yLabel: '% of operations',
      logX: true,
      step: true,
    },
  );
  const levels = [
    ['p50', 50],
    ['p90', 90],
    ['p99', 99],
    ['p99.9', 99.9],
  ] as const;
  const percentiles = plot(
    present.map((t) => {
      const s = summaries[t]!;
      const values = { p50: s.p50, p90: s.p90, p99: s.p99, 'p99.9': s.p999 };
      return { name: t, color: colors[t], points: levels.map(([label, p]) => [p, values[label]] as const) };
    }),
    { title: `${name}: latency percentiles`, xLabel: 'percentile (50, 90, 99, 99.9)', yLabel: 'ms' },
  );
  return histogram + percentiles;
}

function loadSection(name: string, results: Partial<Record<Target, LoadResult | LatencySummary>>): string {
  const present = targets.filter((t) => results[t] !== undefined);
  const loadsOf = present.map((t) => [t, results[t]!] as const);
  const latency: Partial<Record<Target, LatencySummary>> = {};
  for (const [t, r] of loadsOf) latency[t] = 'opsPerSecond' in r ? r.latency : r;
  let html = `<h3>${escape(name)}</h3><div class="plots">` + latencyPlots(name, latency);
  const throughput = loadsOf.filter(
    (entry): entry is readonly [Target, LoadResult] => 'opsPerSecond' in entry[1],
  );
  if (throughput.length > 0) {
    html += plot(
      throughput.map(([t, r]) => ({
        name: `${t} (${fmt(r.opsPerSecond)} ops/s)`,
        color: colors[t],
        points: r.series.map(
          (count, i) => [((i + 1) * r.seriesBucketMs) / 1000, count / (r.seriesBucketMs / 1000)] as const,
        ),
      })),
      { title: `${name}: throughput over time`, xLabel: 's since start', yLabel: 'ops/s' },
    );
  }
  const summary = present
    .map((t) => {
      const s = latency[t]!;
      return `<tr><td>${t}</td><td>${s.count}</td><td>${fmt(s.mean)}</td><td>${fmt(s.p50)}</td><td>${fmt(s.p90)}</td><td>${fmt(s.p99)}</td><td>${fmt(s.p999)}</td><td>${fmt(s.max)}</td></tr>`;
    })
    .join('');
  return (
    html +
    `</div><table><tr><th>target</th><th>ops</th><th>mean ms</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>${summary}</table>`
  );
}

function failoverSection(failover: Partial<Record<Target, ReportFailover>>): string {
  let html = '<h2>Failover: kill -9 of the leader</h2><div class="plots">';
  for (const t of targets) {
    const f = failover[t];
    if (f === undefined) continue;
    html += plot(
      [
        {
          name: `${t} acknowledged writes`,
          color: colors[t],
          // Between kills no writer runs (the killed member restarts): no line there.
          points: f.series.map((count, i) => {
            const t = i * f.bucketMs;
            const writing = f.kills.some((k) => t >= k.writingFrom && t + f.bucketMs <= k.writingTo);
            return [t / 1000, writing ? count / (f.bucketMs / 1000) : NaN] as const;
          }),
        },
      ],
      {
        title: `${t}: writes/s around each kill (median window ${fmt(f.medianMs)} ms)`,
        xLabel: 's since the failover phase began (no line: the killed member restarts, no writers run)',
        yLabel: 'acknowledged writes/s',
        markers: f.kills.map((k) => ({ x: k.killedAt / 1000, label: `kill ${fmt(k.windowMs)} ms` })),
        width: 940,
      },
    );
  }
  return html + '</div>';
}

export function renderHtmlReport(input: ReportInput): string {
  const rows = input.rows
    .map((r) => {
      const met = r.higherIsBetter ? r.ratio >= 1 : r.ratio <= 1;
      if (!Number.isFinite(r.ratio)) {
        // One target only (--target): no ratio.
        return `<tr><td>${escape(r.name)}</td><td>${escape(r.unit)}</td><td>${fmt(r.stoa)}</td><td>${fmt(r.etcd)}</td><td>-</td><td>-</td></tr>`;
      }
      return `<tr><td>${escape(r.name)}</td><td>${escape(r.unit)}</td><td>${fmt(r.stoa)}</td><td>${fmt(r.etcd)}</td><td>${r.ratio.toFixed(2)}</td><td class="${met ? 'ok' : 'no'}">${met ? 'yes' : 'NO'}</td></tr>`;
    })
    .join('');
  const facts = [
    ['date', input.date],
    ['git commit', input.gitCommit],
    ['seed', String(input.seed ?? '')],
    [
      'machine',
      Object.entries(input.machine)
        .map(([k, v]) => `${k}: ${v}`)
        .join(', '),
    ],
    ['load average (1, 5, 15 min) before', input.loadAverage.before.map((n) => n.toFixed(2)).join(', ')],
    ['load average after', input.loadAverage.after.map((n) => n.toFixed(2)).join(', ')],
  ];
  let body = `<h1>${escape(input.title ?? 'Stoa vs etcd')}: ${escape(input.scenario)} bench</h1>`;
  body += `<table>${facts.map(([k, v]) => `<tr><th>${escape(k!)}</th><td>${escape(v!)}</td></tr>`).join('')}</table>`;
  body += `<h2>Results</h2><table><tr><th>row</th><th>unit</th><th>stoa</th><th>etcd</th><th>stoa/etcd</th><th>goal met</th></tr>${rows}</table>`;
  const compared = input.rows.filter((r) => Number.isFinite(r.ratio));
  if (compared.length > 0) body += `<h2>Stoa / etcd</h2>${ratioChart(compared)}`;
  if (input.loads !== undefined) {
    body += '<h2>Workloads</h2>';
    for (const [name, results] of Object.entries(input.loads)) body += loadSection(name, results);
  }
  if (input.failover !== undefined) body += failoverSection(input.failover);
  body += `<h2>Configuration</h2><pre>${escape(JSON.stringify(input.configuration, null, 2))}</pre>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Stoa ${escape(input.scenario)} bench ${escape(input.date)}</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: left; font-size: 13px; }
td.ok { color: #2a7a3a; font-weight: bold; } td.no { color: #b03030; font-weight: bold; }
.plots { display: flex; flex-wrap: wrap; gap: 8px; }
.plots svg { border: 1px solid #eee; }
</style></head><body>${body}</body></html>
`;
}

export async function writeHtmlReport(path: string, input: ReportInput): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, renderHtmlReport(input));
}

/** Writes a scenario's JSON report at `out` and its HTML report beside it, and says where. */
export async function writeReports(
  out: string,
  report: ReportInput,
  log: (line: string) => void,
): Promise<void> {
  await writeJson(out, report);
  const html = out.replace(/\.json$/, '') + '.html';
  await writeHtmlReport(html, report);
  log(`wrote ${out} and ${html}`);
}
