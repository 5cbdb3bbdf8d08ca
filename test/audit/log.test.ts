// Proves the audit log's output: the JSON event (kube's field order, microsecond timestamps, empty fields left
// out), the legacy one-line format, the rotation as lumberjack does it (size, backups kept, age), the batch
// and blocking-strict modes, and the --audit-log-* flag checks with kube-apiserver's messages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { eventJson, eventLegacyLine, formatMicroTime, type AuditEvent } from '../../src/audit/event.js';
import { newLogBackend, RotatingFile, type LineWriter } from '../../src/audit/log-backend.js';
import { parseAuditFlags } from '../../src/server/audit-flags.js';
import { FlagError } from '../../src/server/flag-error.js';
import { tempDir } from '../support/tmp.js';

function event(): AuditEvent {
  return {
    level: 'Metadata',
    auditID: 'id-1',
    stage: 'ResponseComplete',
    requestURI: '/api/v1/namespaces/default/pods?limit=1',
    verb: 'list',
    user: { username: 'alice', groups: ['dev', 'system:authenticated'] },
    sourceIPs: ['127.0.0.1'],
    userAgent: 'curl/8',
    objectRef: { resource: 'pods', namespace: 'default', name: '', apiVersion: 'v1', apiGroup: '' },
    responseStatus: { metadata: {}, code: 200 },
    requestReceivedMicros: Date.UTC(2024, 0, 2, 3, 4, 5) * 1000 + 120,
    stageMicros: Date.UTC(2024, 0, 2, 3, 4, 5) * 1000 + 123456,
    annotations: { 'authorization.k8s.io/decision': 'allow' },
  };
}

test('JSON: kube field order, six fraction digits, empty fields left out', () => {
  assert.equal(formatMicroTime(Date.UTC(2024, 0, 2, 3, 4, 5) * 1000 + 7), '2024-01-02T03:04:05.000007Z');
  assert.equal(
    JSON.stringify(eventJson(event(), 'audit.k8s.io/v1')),
    '{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"id-1","stage":"ResponseComplete",' +
      '"requestURI":"/api/v1/namespaces/default/pods?limit=1","verb":"list","user":{"username":"alice","groups":["dev","system:authenticated"]},' +
      '"sourceIPs":["127.0.0.1"],"userAgent":"curl/8","objectRef":{"resource":"pods","namespace":"default","apiVersion":"v1"},' +
      '"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2024-01-02T03:04:05.000120Z",' +
      '"stageTimestamp":"2024-01-02T03:04:05.123456Z","annotations":{"authorization.k8s.io/decision":"allow"}}',
  );
});

test('legacy: one key="value" line as kube-apiserver writes it', () => {
  assert.equal(
    eventLegacyLine(event()),
    '2024-01-02T03:04:05.00012Z AUDIT: id="id-1" stage="ResponseComplete" ip="127.0.0.1" method="list" user="alice" ' +
      'groups="\\"dev\\",\\"system:authenticated\\"" as="<self>" asgroups="<lookup>" user-agent="curl/8" namespace="default" ' +
      'uri="/api/v1/namespaces/default/pods?limit=1" response="200"',
  );
  const received: AuditEvent = {
    ...event(),
    stage: 'RequestReceived',
    user: {},
    impersonatedUser: { username: 'bob' },
  };
  delete received.responseStatus;
  delete received.objectRef;
  assert.match(
    eventLegacyLine(received),
    / user="<none>" groups="<none>" as="bob" asgroups="<lookup>" .* namespace="<none>" .* response="<deferred>"$/,
  );
});

test('rotation: over the size the file moves to name-<UTC stamp>.ext; backups beyond the count and age go', async () => {
  const dir = await tempDir('audit-rotate');
  try {
    const path = join(dir.path, 'audit.log');
    // Backups: one older than --audit-log-maxage 30, three recent (one beyond --audit-log-maxbackup 3).
    writeFileSync(join(dir.path, 'audit-2024-01-01T00-00-00.000.log'), 'old\n');
    writeFileSync(join(dir.path, 'audit-2024-03-01T00-00-00.000.log'), 'recent-1\n');
    writeFileSync(join(dir.path, 'audit-2024-03-02T00-00-00.000.log'), 'recent-2\n');
    writeFileSync(join(dir.path, 'audit-2024-03-05T00-00-00.000.log'), 'recent-3\n');
    writeFileSync(join(dir.path, 'unrelated.txt'), 'x\n');
    const now = new Date(Date.UTC(2024, 2, 10, 1, 2, 3, 4));
    const file = new RotatingFile(
      path,
      { maxAgeDays: 30, maxBackups: 3, maxSizeMegabytes: 1, compress: false },
      () => {},
      () => now,
    );
    const line = `${'x'.repeat(1023)}\n`;
    for (let i = 0; i < 1024; i++) file.write(line); // exactly 1 MiB: no rotation yet
    assert.equal(readdirSync(dir.path).length, 6);
    file.write('next\n');
    file.write('after\n');
    file.close();
    assert.equal(readFileSync(path, 'utf8'), 'next\nafter\n');
    assert.deepEqual(readdirSync(dir.path).sort(), [
      'audit-2024-03-02T00-00-00.000.log',
      'audit-2024-03-05T00-00-00.000.log',
      'audit-2024-03-10T01-02-03.004.log',
      'audit.log',
      'unrelated.txt',
    ]);
    assert.throws(
      () =>
        new RotatingFile(path, { maxAgeDays: 0, maxBackups: 0, maxSizeMegabytes: 1, compress: false }).write(
          'y'.repeat(2 * 1024 * 1024),
        ),
      /write length 2097152 exceeds maximum file size 1048576/,
    );
  } finally {
    await dir.remove();
  }
});

test('--audit-log-compress: a rotated file becomes name-<stamp>.ext.gz and still counts as a backup', async () => {
  const dir = await tempDir('audit-compress');
  try {
    const path = join(dir.path, 'audit.json');
    writeFileSync(join(dir.path, 'audit-2024-03-01T00-00-00.000.json.gz'), 'older\n');
    const now = new Date(Date.UTC(2024, 2, 10, 0, 0, 0, 0));
    const file = new RotatingFile(
      path,
      { maxAgeDays: 0, maxBackups: 1, maxSizeMegabytes: 1, compress: true },
      () => {},
      () => now,
    );
    file.write(`${'a'.repeat(1024 * 1024 - 1)}\n`);
    file.write('b\n');
    await file.settled();
    file.close();
    assert.deepEqual(readdirSync(dir.path).sort(), ['audit-2024-03-10T00-00-00.000.json.gz', 'audit.json']);
    const unzipped = gunzipSync(readFileSync(join(dir.path, 'audit-2024-03-10T00-00-00.000.json.gz')));
    assert.equal(unzipped.length, 1024 * 1024);
  } finally {
    await dir.remove();
  }
});

test('modes: blocking ignores a failed write, blocking-strict reports it, batch writes on the next turn', async () => {
  const lines: string[] = [];
  const failing: LineWriter = {
    write: () => {
      throw new Error('disk full');
    },
    close: () => {},
  };
  const seen: unknown[] = [];
  assert.equal(newLogBackend(failing, 'blocking', (e) => seen.push(e)).process('a\n'), true);
  assert.equal(newLogBackend(failing, 'blocking-strict', (e) => seen.push(e)).process('a\n'), false);
  assert.equal(seen.length, 2);
  const batch = newLogBackend({ write: (l) => lines.push(l), close: () => {} }, 'batch', () => {});
  batch.process('1\n');
  batch.process('2\n');
  assert.deepEqual(lines, []);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(lines, ['1\n', '2\n']);
});

function flags(values: Record<string, string>): ReturnType<typeof parseAuditFlags> {
  return parseAuditFlags((name) => values[name], 'k8s.io');
}

function flagError(values: Record<string, string>): string {
  try {
    flags(values);
  } catch (error) {
    assert.ok(error instanceof FlagError);
    return error.message;
  }
  assert.fail('accepted');
}

test('flags: kube defaults, and its checks when a log path is given', () => {
  assert.deepEqual(flags({}), {
    logFormat: 'json',
    logMode: 'blocking',
    logVersion: 'audit.k8s.io/v1',
    rotation: { maxAgeDays: 0, maxBackups: 0, maxSizeMegabytes: 0, compress: false },
  });
  assert.equal(flags({ 'audit-log-mode': 'nonsense' }).logMode, 'nonsense', 'unchecked without a log path');
  const path = { 'audit-log-path': '/tmp/x.log' };
  assert.equal(
    flagError({ ...path, 'audit-log-mode': 'async' }),
    'invalid audit log mode async, allowed modes are "batch,blocking,blocking-strict"',
  );
  assert.equal(
    flagError({ ...path, 'audit-log-format': 'xml' }),
    'invalid audit log format xml, allowed formats are "legacy,json"',
  );
  assert.equal(
    flagError({ ...path, 'audit-log-version': 'audit.k8s.io/v1beta1' }),
    'invalid group version, allowed versions are ["audit.k8s.io/v1"]',
  );
  assert.equal(flagError({ 'audit-log-maxage': '-1' }), "--audit-log-maxage -1 can't be a negative number");
  assert.equal(
    flagError({ 'audit-log-maxsize': 'ten' }),
    'invalid argument "ten" for "--audit-log-maxsize" flag: strconv.ParseInt: parsing "ten": invalid syntax',
  );
  assert.equal(parseAuditFlags(() => undefined, 'svc.io').logVersion, 'audit.svc.io/v1');
  assert.equal(flags({ 'audit-log-compress': 'true' }).rotation.compress, true);
  assert.equal(
    flagError({ 'audit-log-compress': 'yes' }),
    'invalid argument "yes" for "--audit-log-compress" flag: strconv.ParseBool: parsing "yes": invalid syntax',
  );
});
