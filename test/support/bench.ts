// What every bench smoke test checks of a side-by-side report: each expected row is there, with a positive
// number for Stoa, for etcd and for their ratio, and the terminal table printed it. Nothing about speed.
import assert from 'node:assert/strict';

export interface SideBySideRow {
  readonly name: string;
  readonly stoa: unknown;
  readonly etcd: unknown;
  readonly ratio: unknown;
}

export function assertSideBySideRows(
  rows: readonly SideBySideRow[],
  stdout: string,
  prefixes: readonly string[],
): void {
  for (const prefix of prefixes) {
    const row = rows.find((r) => r.name.startsWith(prefix));
    assert.ok(row !== undefined, `row ${prefix} missing from ${rows.map((r) => r.name).join('; ')}`);
    for (const figure of [row.stoa, row.etcd, row.ratio]) {
      assert.ok(
        typeof figure === 'number' && Number.isFinite(figure) && figure > 0,
        `${row.name}: ${String(figure)}`,
      );
    }
    assert.ok(stdout.includes(row.name), `the table printed ${row.name}`);
  }
}
