// Wire messages shared by every group: meta/v1, runtime, intstr and resource (notation: ./schema.ts).

import type { PackageText } from './schema.js';

export const metaPackages: readonly PackageText[] = [
  {
    name: 'runtime',
    text: `
      TypeMeta { apiVersion 1; kind 2 }
      Unknown { typeMeta:TypeMeta 1; raw:bytes 2; contentEncoding 3; contentType 4 }
      RawExtension { raw:bytes 1 }
    `,
  },
  { name: 'intstr', text: `IntOrString { type:int64 1; intVal:int32 2; strVal 3 }` },
  { name: 'resource', text: `Quantity { string 1 }` },
  {
    name: 'meta.v1',
    groupPrefix: 'meta',
    version: 'v1',
    text: `
      Time { seconds:int64 1; nanos:int32 2 }
      MicroTime { seconds:int64 1; nanos:int32 2 }
      Duration { duration:int64 1 }
      FieldsV1 { Raw:bytes 1 }
      TypeMeta { kind 1; apiVersion 2 }
      ObjectMeta {
        name 1; generateName 2; namespace 3; selfLink 4; uid 5; resourceVersion 6; generation:int64 7;
        creationTimestamp:Time 8; deletionTimestamp:Time? 9; deletionGracePeriodSeconds:int64? 10;
        labels:<string> 11; annotations:<string> 12; ownerReferences:[OwnerReference] 13;
        finalizers:[string] 14; managedFields:[ManagedFieldsEntry] 17
      }
      OwnerReference { apiVersion 5; kind 1; name 3; uid 4; controller:bool? 6; blockOwnerDeletion:bool? 7 }
      ManagedFieldsEntry {
        manager 1; operation 2; apiVersion 3; time:Time? 4; fieldsType 6; fieldsV1:FieldsV1? 7; subresource 8
      }
      ListMeta { selfLink 1; resourceVersion 2; continue 3; remainingItemCount:int64? 4 }
      LabelSelector { matchLabels:<string> 1; matchExpressions:[LabelSelectorRequirement] 2 }
      LabelSelectorRequirement { key 1; operator 2; values:[string] 3 }
      Condition {
        type 1; status 2; observedGeneration:int64 3; lastTransitionTime:Time 4; reason 5; message 6
      }
      Preconditions { uid? 1; resourceVersion? 2 }
      kind DeleteOptions {
        gracePeriodSeconds:int64? 1; preconditions:Preconditions? 2; orphanDependents:bool? 3;
        propagationPolicy? 4; dryRun:[string] 5; ignoreStoreReadErrorWithClusterBreakingPotential:bool? 6
      }
      kind Status {
        metadata:ListMeta 1; status 2; message 3; reason 4; details:StatusDetails? 5; code:int32 6
      }
      StatusDetails {
        name 1; group 2; kind 3; uid 6; causes:[StatusCause] 4; retryAfterSeconds:int32 5
      }
      StatusCause { reason 1; message 2; field 3 }
      kind WatchEvent { type 1; object:runtime.RawExtension 2 }
      kind PartialObjectMetadata { metadata:ObjectMeta 1 }
      kind PartialObjectMetadataList { metadata:ListMeta 1; items:[PartialObjectMetadata] 2 }
    `,
  },
];
