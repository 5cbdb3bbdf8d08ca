// The metric life cycle (spec 3.5): stability levels in the help text, deprecation notices, hiding three minor
// releases after deprecation, --show-hidden-metrics-for-version (only the previous minor) and --disabled-metrics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Gauge, Registry } from 'prom-client';
import {
  MetricLifecycle,
  annotatedHelp,
  metricState,
  validateShowHiddenMetricsVersion,
} from '../../src/server/metric-lifecycle.js';
import { FlagError, parseServeFlags } from '../../src/server/flags.js';
import { Metrics } from '../../src/server/metrics.js';

const v132 = { major: 1, minor: 32 };

test('a deprecated metric stays registered for two releases and is hidden from the third on', () => {
  const at = (deprecatedVersion: string, flags = {}): string =>
    metricState('m', { stabilityLevel: 'STABLE', deprecatedVersion }, v132, flags).state;
  assert.equal(at('1.33.0'), 'registered'); // deprecated in a later release: not yet
  assert.equal(
    metricState('m', { stabilityLevel: 'STABLE', deprecatedVersion: '1.33.0' }, v132, {}).deprecated,
    false,
  );
  assert.equal(at('1.32.0'), 'registered');
  assert.equal(at('1.31.0'), 'registered');
  assert.equal(at('1.30.0'), 'registered');
  assert.equal(at('1.29.0'), 'hidden');
  assert.equal(at('1.20.0'), 'hidden');
  assert.equal(at('1.29.0', { showHiddenMetricsForVersion: '1.31' }), 'registered');
  // Disabling wins over showing hidden metrics.
  assert.equal(
    metricState('m', { stabilityLevel: 'ALPHA', deprecatedVersion: '1.29.0' }, v132, {
      showHiddenMetricsForVersion: '1.31',
      disabledMetrics: ['m'],
    }).state,
    'disabled',
  );
  assert.equal(
    metricState('m', { stabilityLevel: 'ALPHA' }, v132, { disabledMetrics: ['other'] }).state,
    'registered',
  );
});

test('help text: the stability level first, then the deprecation notice', () => {
  assert.equal(annotatedHelp('Requests.', { stabilityLevel: 'STABLE' }, false), '[STABLE] Requests.');
  assert.equal(
    annotatedHelp('Size.', { stabilityLevel: 'ALPHA', deprecatedVersion: '1.31.0' }, true),
    '[ALPHA] (Deprecated since 1.31.0) Size.',
  );
});

test('--show-hidden-metrics-for-version accepts only the previous minor release, worded as kube-apiserver', () => {
  validateShowHiddenMetricsVersion(v132, '1.31');
  validateShowHiddenMetricsVersion(v132, '');
  for (const bad of ['1.30', '1.32', 'v1.31', '1.31.0']) {
    assert.throws(
      () => validateShowHiddenMetricsVersion(v132, bad),
      (error: unknown) =>
        error instanceof FlagError &&
        error.message ===
          "--show-hidden-metrics-for-version must be omitted or have the value '1.31'. Only the previous minor version is meaningful, other values are not allowed.",
    );
  }
  assert.throws(() => parseServeFlags(['--show-hidden-metrics-for-version=1.29']), FlagError);
  const parsed = parseServeFlags([
    '--show-hidden-metrics-for-version',
    '1.31',
    '--disabled-metrics=a_total, b_total',
    '--disabled-metrics',
    'c_total',
  ]);
  assert.ok(parsed !== 'help');
  assert.deepEqual(parsed.metrics, {
    showHiddenMetricsForVersion: '1.31',
    disabledMetrics: ['a_total', 'b_total', 'c_total'],
  });
  const none = parseServeFlags([]);
  assert.ok(none !== 'help');
  assert.deepEqual(none.metrics, {});
});

test('a registry exposes what the life cycle registers, and counts it in the meta metrics', async () => {
  const expose = async (flags: ConstructorParameters<typeof MetricLifecycle>[2]): Promise<string> => {
    const registry = new Registry();
    const lifecycle = new MetricLifecycle(registry, v132, flags);
    new Counter(lifecycle.declare({ name: 'kept_total', help: 'Kept.' }, { stabilityLevel: 'STABLE' }));
    new Gauge(
      lifecycle.declare(
        { name: 'recently_deprecated', help: 'Recent.' },
        { stabilityLevel: 'BETA', deprecatedVersion: '1.31.0' },
      ),
    );
    const old = new Counter(
      lifecycle.declare(
        { name: 'long_deprecated_total', help: 'Old.' },
        { stabilityLevel: 'ALPHA', deprecatedVersion: '1.28.0' },
      ),
    );
    old.inc(); // a hidden metric still works for the code that updates it
    return registry.metrics();
  };
  const plain = await expose({});
  assert.match(plain, /# HELP kept_total \[STABLE\] Kept\./);
  assert.match(plain, /# HELP recently_deprecated \[BETA\] \(Deprecated since 1\.31\.0\) Recent\./);
  assert.doesNotMatch(plain, /long_deprecated_total/);
  assert.match(plain, /# HELP registered_metrics_total \[BETA\] The count of registered metrics/);
  assert.match(plain, /registered_metrics_total\{stability_level="STABLE",deprecated_version=""\} 1/);
  assert.match(plain, /registered_metrics_total\{stability_level="BETA",deprecated_version="1\.31\.0"\} 1/);
  // The three meta metrics count themselves, as kube's do.
  assert.match(plain, /registered_metrics_total\{stability_level="BETA",deprecated_version=""\} 3/);
  assert.match(plain, /\nhidden_metrics_total 1\n/);
  assert.match(plain, /\ndisabled_metrics_total 0\n/);

  const shown = await expose({ showHiddenMetricsForVersion: '1.31' });
  assert.match(shown, /# HELP long_deprecated_total \[ALPHA\] \(Deprecated since 1\.28\.0\) Old\./);
  assert.match(shown, /\nlong_deprecated_total 1\n/);
  assert.match(shown, /\nhidden_metrics_total 0\n/);

  const disabled = await expose({ disabledMetrics: ['kept_total', 'no_such_metric'] });
  assert.doesNotMatch(disabled, /kept_total/);
  assert.match(disabled, /\ndisabled_metrics_total 2\n/);
  assert.doesNotMatch(disabled, /registered_metrics_total\{stability_level="STABLE"/);
});

test("the server's request metrics carry kube-apiserver's stability levels", async () => {
  const metrics = new Metrics();
  metrics.requests.inc({ verb: 'GET', group: '', resource: 'pods', subresource: '', code: '200' });
  const text = await metrics.registry.metrics();
  assert.match(text, /# HELP apiserver_request_total \[STABLE\] /);
  assert.match(text, /# HELP apiserver_request_duration_seconds \[STABLE\] /);
  assert.match(text, /# HELP apiserver_current_inflight_requests \[STABLE\] /);
  assert.match(text, /# HELP apiserver_longrunning_requests \[STABLE\] /);
  assert.match(text, /# HELP etcd_request_duration_seconds \[ALPHA\] /);
  assert.match(text, /registered_metrics_total\{stability_level="STABLE",deprecated_version=""\} 5/);
  const without = await new Metrics({ disabledMetrics: ['apiserver_request_total'] }).registry.metrics();
  assert.doesNotMatch(without, /apiserver_request_total/);
});
