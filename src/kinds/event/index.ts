// Event: core/v1 and events.<domain>/v1, two views of one stored object (kept in core/v1 form): the events
// group renames some fields (involvedObject → regarding, message → note, source → deprecatedSource, ...).

import { domainGroup, type DomainContext, type KindDeclaration } from '../../apimachinery/kind.js';
import { objectSchema, type ApiObject } from '../../apimachinery/meta.js';
import { s } from '../../apimachinery/schema.js';
import { age } from '../../apimachinery/table.js';
import { fieldString, record } from '../common.js';

const objectReference = s.obj({
  kind: s.str(),
  namespace: s.str(),
  name: s.str(),
  uid: s.str(),
  apiVersion: s.str(),
  resourceVersion: s.str(),
  fieldPath: s.str(),
});

export function coreEventKind(_ctx: DomainContext): KindDeclaration {
  return {
    group: '',
    versions: ['v1'],
    kind: 'Event',
    plural: 'events',
    singular: 'event',
    shortNames: ['ev'],
    categories: [],
    namespaced: true,
    nameRule: 'dns-subdomain',
    schema: objectSchema(
      {
        involvedObject: objectReference,
        reason: s.str(),
        message: s.str(),
        source: s.obj({ component: s.str(), host: s.str() }),
        firstTimestamp: s.time(),
        lastTimestamp: s.time(),
        count: s.int(),
        type: s.str(),
        eventTime: s.time(),
        series: s.free(),
        action: s.str(),
        related: objectReference,
        reportingComponent: s.str(),
        reportingInstance: s.str(),
      },
      ['involvedObject'],
    ),
    allowCreateOnUpdate: false,
    statusSubresource: false,
    tableColumns: [
      {
        name: 'Last Seen',
        type: 'string',
        description: 'Time since the last occurrence',
        priority: 0,
        cell: (o) => age((o.lastTimestamp as string | undefined) ?? o.metadata.creationTimestamp),
      },
      {
        name: 'Type',
        type: 'string',
        description: 'Event type',
        priority: 0,
        cell: (o) => fieldString(o, 'type'),
      },
      {
        name: 'Reason',
        type: 'string',
        description: 'Reason',
        priority: 0,
        cell: (o) => fieldString(o, 'reason'),
      },
      {
        name: 'Object',
        type: 'string',
        description: 'The object the event is about',
        priority: 0,
        cell: (o) =>
          `${fieldString(o, 'involvedObject.kind').toLowerCase()}/${fieldString(o, 'involvedObject.name')}`,
      },
      {
        name: 'Message',
        type: 'string',
        description: 'Message',
        priority: 0,
        cell: (o) => fieldString(o, 'message'),
      },
    ],
    selectableFields: Object.fromEntries(
      [
        'involvedObject.kind',
        'involvedObject.namespace',
        'involvedObject.name',
        'involvedObject.uid',
        'involvedObject.apiVersion',
        'involvedObject.resourceVersion',
        'involvedObject.fieldPath',
        'reason',
        'reportingComponent',
        'source',
        'type',
      ].map((f) => [f, (o) => (f === 'source' ? fieldString(o, 'source.component') : fieldString(o, f))]),
    ),
    strategy: {
      prepareForCreate: (o) => {
        if (o.type === undefined) o.type = 'Normal';
        void record;
      },
    },
  };
}

/** Field renames between core/v1 Event (left) and events.DOMAIN/v1 Event (right); the rest is shared. */
const renames: readonly (readonly [string, string])[] = [
  ['involvedObject', 'regarding'],
  ['message', 'note'],
  ['source', 'deprecatedSource'],
  ['firstTimestamp', 'deprecatedFirstTimestamp'],
  ['lastTimestamp', 'deprecatedLastTimestamp'],
  ['count', 'deprecatedCount'],
  ['reportingComponent', 'reportingController'],
];

function rename(object: ApiObject, from: 0 | 1): ApiObject {
  const to = from === 0 ? 1 : 0;
  const out: ApiObject = { ...object };
  for (const pair of renames) {
    const a = pair[from];
    const b = pair[to];
    delete out[a];
    if (object[a] !== undefined) out[b] = object[a];
  }
  return out;
}

export function eventsGroupEventKind(ctx: DomainContext): KindDeclaration {
  return {
    storage: {
      group: '',
      plural: 'events',
      toStorage: (o) => ({ ...rename(o, 1), apiVersion: 'v1', kind: 'Event' }),
      fromStorage: (o) => rename(o, 0),
    },
    group: domainGroup(ctx, 'events'),
    versions: ['v1'],
    kind: 'Event',
    plural: 'events',
    singular: 'event',
    shortNames: ['ev'],
    categories: [],
    namespaced: true,
    nameRule: 'dns-subdomain',
    schema: objectSchema(
      {
        eventTime: s.str({ format: 'date-time', nullable: true }),
        series: s.free(),
        reportingController: s.str(),
        reportingInstance: s.str(),
        action: s.str(),
        reason: s.str(),
        regarding: objectReference,
        related: objectReference,
        note: s.str(),
        type: s.str({ enum: ['Normal', 'Warning'] }),
        deprecatedSource: s.obj({ component: s.str(), host: s.str() }),
        deprecatedFirstTimestamp: s.time(),
        deprecatedLastTimestamp: s.time(),
        deprecatedCount: s.int(),
      },
      ['eventTime'],
    ),
    allowCreateOnUpdate: false,
    statusSubresource: false,
    selectableFields: {
      reason: (o) => fieldString(o, 'reason'),
      type: (o) => fieldString(o, 'type'),
      'regarding.kind': (o) => fieldString(o, 'regarding.kind'),
      'regarding.name': (o) => fieldString(o, 'regarding.name'),
      'regarding.namespace': (o) => fieldString(o, 'regarding.namespace'),
      reportingController: (o) => fieldString(o, 'reportingController'),
    },
    strategy: {
      validate: (o) =>
        ['reportingController', 'reportingInstance', 'action', 'reason']
          .filter((f) => typeof o[f] !== 'string' || o[f] === '')
          .map((f) => ({ type: 'FieldValueRequired' as const, field: f })),
    },
  };
}
