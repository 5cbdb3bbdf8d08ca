// Proves the API machinery pieces: duplicate keys found in JSON and YAML, label and field selectors, content
// negotiation (406/415, Table), unknown-field pruning, schema defaulting and validation, Status shapes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJson, decodeYaml } from '../../src/apimachinery/codec.js';
import { matches, parseFieldSelector, parseLabelSelector } from '../../src/apimachinery/selectors.js';
import { negotiateBody, negotiateResponse } from '../../src/apimachinery/negotiation.js';
import { compileValidator, pruneUnknownFields } from '../../src/apimachinery/schema.js';
import { ApiError, errors, statusOf } from '../../src/apimachinery/status.js';
import { deploymentKind } from '../../src/kinds/deployment/index.js';
import { validateName } from '../../src/apimachinery/meta.js';

const ctx = { groupDomain: 'svc.io', serviceClusterIpRange: '10.0.0.0/24' };

test('JSON duplicate keys are reported by path, the last value wins', () => {
  const d = decodeJson('{"a":1,"b":{"c":[{"x":1,"x":2}],"c":3},"a":"\\u0061"}');
  assert.deepEqual(d.duplicateFields, ['b.c[0].x', 'b.c', 'a']);
  assert.deepEqual(d.value, { a: 'a', b: { c: 3 } });
  assert.deepEqual(decodeJson('{"a":"{\\"a\\":1,","b":["a","a"]}').duplicateFields, []);
  assert.throws(
    () => decodeJson('{'),
    (e: unknown) => e instanceof ApiError && e.code === 400,
  );
});

test('YAML duplicate keys are reported by path', () => {
  const d = decodeYaml('metadata:\n  name: a\n  name: b\nspec:\n  list:\n  - k: 1\n    k: 2\n');
  assert.deepEqual(d.duplicateFields, ['metadata.name', 'spec.list[0].k']);
  assert.deepEqual(d.value, { metadata: { name: 'b' }, spec: { list: [{ k: 2 }] } });
});

test('label selectors: every operator', () => {
  const labels = { app: 'web', tier: 'front', 'example.com/x': 'y' };
  const cases: [string, boolean][] = [
    ['app=web', true],
    ['app==web', true],
    ['app!=web', false],
    ['app in (web,db)', true],
    ['app notin (web,db)', false],
    ['tier', true],
    ['!tier', false],
    ['!missing', true],
    ['missing!=x', true],
    ['app=web,tier=back', false],
    ['example.com/x=y', true],
  ];
  for (const [text, want] of cases) assert.equal(matches(parseLabelSelector(text), labels), want, text);
  assert.throws(() => parseLabelSelector('app=we b'), /unable to parse/);
});

test('field selectors accept only declared fields', () => {
  const fields = new Set(['metadata.name', 'status.phase']);
  const sel = parseFieldSelector('status.phase!=Running,metadata.name=a', fields);
  assert.equal(matches(sel, { 'metadata.name': 'a', 'status.phase': 'Pending' }), true);
  assert.equal(matches(sel, { 'metadata.name': 'a', 'status.phase': 'Running' }), false);
  assert.throws(() => parseFieldSelector('spec.foo=1', fields), /field label not supported: spec.foo/);
});

test('negotiation: Table, fallback, 406, 415', () => {
  const opts = { metaGroup: 'meta.k8s.io', tableAllowed: true };
  assert.equal(
    negotiateResponse('application/json;as=Table;v=v1;g=meta.k8s.io,application/json', opts).as,
    'Table',
  );
  assert.equal(
    negotiateResponse('application/json;as=Table;v=v1;g=meta.svc.io,application/json', opts).as,
    'object',
  );
  assert.equal(
    negotiateResponse('application/json;as=Table;v=v1;g=meta.k8s.io, application/json', {
      ...opts,
      tableAllowed: false,
    }).as,
    'object',
  );
  assert.equal(negotiateResponse('application/yaml', opts).serialization, 'yaml');
  assert.equal(negotiateResponse(undefined, opts).serialization, 'json');
  assert.throws(
    () => negotiateResponse('text/html', opts),
    (e: unknown) => e instanceof ApiError && e.code === 406,
  );
  assert.equal(negotiateBody('application/yaml; charset=utf-8', ['json', 'yaml']), 'yaml');
  assert.throws(
    () => negotiateBody('text/plain', ['json', 'yaml']),
    (e: unknown) => e instanceof ApiError && e.code === 415,
  );
});

test('unknown fields are pruned and reported; defaults applied; type errors reported', () => {
  const decl = deploymentKind(ctx);
  const object = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd', labels: { a: 'b' }, bogus: 1 },
    spec: {
      selector: { matchLabels: { a: 'b' } },
      template: {
        metadata: { labels: { a: 'b' } },
        spec: { containers: [{ name: 'c', image: 'i', typo: true }] },
      },
      extra: {},
    },
  };
  assert.deepEqual(pruneUnknownFields(decl.schema, object), [
    'metadata.bogus',
    'spec.template.spec.containers[0].typo',
    'spec.extra',
  ]);
  const validate = compileValidator(decl.schema);
  assert.deepEqual(validate(object), []);
  assert.equal((object.spec as Record<string, unknown>).replicas, 1);
  assert.equal((object.spec as Record<string, unknown>).revisionHistoryLimit, 10);
  assert.equal((object.spec as Record<string, unknown>).progressDeadlineSeconds, 600);
  const bad = { metadata: { name: 'd' }, spec: { replicas: 'x', selector: {} } };
  const errs = validate(bad);
  assert.ok(errs.some((e) => e.field === 'spec.replicas' && e.type === 'FieldValueTypeInvalid'));
  assert.ok(errs.some((e) => e.field === 'spec.template' && e.type === 'FieldValueRequired'));
});

test('Status bodies carry kube-apiserver wording and codes', () => {
  const nf = statusOf(errors.notFound({ group: 'apps', resource: 'deployments' }, 'x'));
  assert.equal(nf.message, 'deployments.apps "x" not found');
  assert.equal(nf.code, 404);
  assert.deepEqual(nf.details, { name: 'x', group: 'apps', kind: 'deployments' });
  const inv = statusOf(
    errors.invalid('', 'Pod', 'p', [{ type: 'FieldValueRequired', field: 'spec.containers' }]),
  );
  assert.equal(inv.message, 'Pod "p" is invalid: spec.containers: Required value');
  assert.equal(inv.code, 422);
  assert.equal(statusOf(errors.staleUpdate({ group: '', resource: 'pods' }, 'p')).code, 409);
  assert.equal(statusOf(errors.tooLargeResourceVersion(9, 3)).code, 504);
  assert.match(errors.tooLargeResourceVersion(9, 3).message, /^Too large resource version/);
});

test('name rules', () => {
  assert.deepEqual(validateName('dns-label', 'abc-1'), []);
  assert.equal(validateName('dns-label', 'a.b').length, 1);
  assert.deepEqual(validateName('dns-subdomain', 'a.b'), []);
  assert.equal(validateName('dns-subdomain', 'A').length, 1);
});
